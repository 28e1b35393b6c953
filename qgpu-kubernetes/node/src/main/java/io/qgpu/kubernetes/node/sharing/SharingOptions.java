package io.qgpu.kubernetes.node.sharing;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Ticker;
import io.qgpu.kubernetes.node.mps.MpsDaemonMode;
import io.qgpu.kubernetes.node.mps.MpsLayout;
import io.qgpu.kubernetes.node.mps.MpsSupervisor;
import io.qgpu.kubernetes.node.mps.ProcessMpsControl;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The sharing back end of a node agent as its command line chooses it: the flags both the device plugin and
 * the DRA driver take ({@link #FLAGS}), their parsing with errors that name the flag and the value, and what
 * the agent opens from them ({@link #open()}, {@link #supervisor}).
 *
 * <pre>{@code
 * SharingOptions s = SharingOptions.parse(Map.of("--sharing", "mps", "--mps-root", "/run/qgpu/mps"));
 * NodeSharing sharing = s.open();
 * Optional<MpsSupervisor> mps = s.supervisor(Ticker.system());   // present with --sharing mps
 * }</pre>
 *
 * @param backend           {@code --sharing}
 * @param mpsRoot           {@code --mps-root}: the MPS daemons' directories ({@link MpsLayout})
 * @param mpsControl        {@code --mps-control}: the {@code nvidia-cuda-mps-control} program, a path or a name on the {@code PATH}
 * @param mpsShmDir         {@code --mps-shm-dir}: the node directory the MPS daemons and clients use as {@code /dev/shm};
 *                          empty: {@code <mps-root>/shm} ({@link #mpsShmDirectory()})
 * @param hamiCoreLibrary   {@code --hami-core-library}: HAMi-core's {@code libvgpu.so} on the node
 * @param hamiCoreCacheRoot {@code --hami-core-cache-root}: the node directory under which each container gets its cache directory
 * @param hamiCoreLockDir   {@code --hami-core-lock-dir}: the node's HAMi-core lock directory, mounted at {@code /tmp/vgpulock}
 * @param mpsTickEvery      how often the agent ticks its MPS supervisor; zero: never (tests tick it themselves)
 * @param hamiCorePreloadFile {@code --hami-core-preload-file}: the node file the agent writes with the container path of
 *                          {@code libvgpu.so} and mounts at {@code /etc/ld.so.preload} (default
 *                          {@link HamiCoreSharing#defaultPreloadFile} of the cache root); empty with
 *                          {@code --hami-core-preload env}: {@code LD_PRELOAD} instead
 * @param mpsDaemons        {@code --mps-daemons}: who starts a GPU's MPS control daemon when none answers
 *
 * <p>Thread safety: immutable.
 */
public record SharingOptions(SharingBackend backend, Path mpsRoot, Path mpsControl, Optional<Path> mpsShmDir,
                             Path hamiCoreLibrary, Path hamiCoreCacheRoot, Path hamiCoreLockDir, Duration mpsTickEvery,
                             Optional<Path> hamiCorePreloadFile,
                             MpsDaemonMode mpsDaemons) {
    /** The flags, each taking a value. */
    public static final List<String> FLAGS = List.of(SharingBackend.FLAG, "--mps-root", "--mps-control", "--mps-shm-dir", MpsDaemonMode.FLAG,
            HamiCoreSharing.LIBRARY_FLAG, "--hami-core-cache-root", "--hami-core-lock-dir",
            HamiCoreSharing.PRELOAD_FLAG, HamiCoreSharing.PRELOAD_FILE_FLAG);
    /** Their lines in an agent's usage text. */
    public static final String USAGE = """
              --sharing none|mps|hami-core   the engine that enforces the slices' limits (default none: the limits
                                    are QGPU_* environment only); see docs/enforcement.md
              --mps-root DIR        with mps: the MPS daemons' pipe and log directories (default /run/qgpu/mps)
              --mps-control PATH    with mps: nvidia-cuda-mps-control (default: found on the PATH)
              --mps-shm-dir DIR     with mps: the node directory that is the daemons' and every client's /dev/shm
                                    (default MPS_ROOT/shm; a tmpfs directory)
              --mps-daemons external|agent  with mps: who starts a GPU's control daemon when none answers: the
                                    MPS control daemon DaemonSet (external, the default) or the agent itself
              --hami-core-library PATH      with hami-core: libvgpu.so on the node
                                    (default /usr/local/vgpu/libvgpu.so; the agent refuses to start without it)
              --hami-core-cache-root DIR    with hami-core: per-container cache directories
                                    (default /var/lib/qgpu/hami-core)
              --hami-core-lock-dir DIR      with hami-core: the node's lock directory shared by its containers
                                    (default /tmp/vgpulock)
              --hami-core-preload file|env  with hami-core: load libvgpu.so through a node file mounted at
                                    /etc/ld.so.preload (default file), or through LD_PRELOAD (env)
              --hami-core-preload-file PATH with hami-core and --hami-core-preload file: that node file
                                    (default: hami-core-preload/ld.so.preload beside the cache root)
            """;
    /** Default of {@code --hami-core-library}. */
    public static final Path DEFAULT_HAMI_CORE_LIBRARY = Path.of("/usr/local/vgpu/libvgpu.so");
    /** Default of {@code --hami-core-cache-root}. */
    public static final Path DEFAULT_HAMI_CORE_CACHE_ROOT = Path.of("/var/lib/qgpu/hami-core");
    /** How long one {@code nvidia-cuda-mps-control} command may take. */
    public static final Duration MPS_COMMAND_TIMEOUT = Duration.ofSeconds(10);

    public SharingOptions {
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(mpsRoot, "mpsRoot");
        Objects.requireNonNull(mpsControl, "mpsControl");
        Objects.requireNonNull(mpsShmDir, "mpsShmDir");
        Objects.requireNonNull(hamiCoreLibrary, "hamiCoreLibrary");
        Objects.requireNonNull(hamiCoreCacheRoot, "hamiCoreCacheRoot");
        Objects.requireNonNull(hamiCoreLockDir, "hamiCoreLockDir");
        Objects.requireNonNull(mpsTickEvery, "mpsTickEvery");
        Objects.requireNonNull(hamiCorePreloadFile, "hamiCorePreloadFile");
        if (mpsTickEvery.isNegative()) {
            throw new IllegalArgumentException("mpsTickEvery = " + mpsTickEvery + ": must not be negative");
        }
        Objects.requireNonNull(mpsDaemons, "mpsDaemons");
    }

    /**
     * As the canonical constructor, with HAMi-core's library loaded through the default preload file beside
     * {@code hamiCoreCacheRoot} ({@link HamiCoreSharing#defaultPreloadFile}) and {@code --mps-daemons external}.
     */
    public SharingOptions(SharingBackend backend, Path mpsRoot, Path mpsControl, Optional<Path> mpsShmDir,
                          Path hamiCoreLibrary, Path hamiCoreCacheRoot, Path hamiCoreLockDir, Duration mpsTickEvery) {
        this(backend, mpsRoot, mpsControl, mpsShmDir, hamiCoreLibrary, hamiCoreCacheRoot, hamiCoreLockDir, mpsTickEvery,
                Optional.of(HamiCoreSharing.defaultPreloadFile(Objects.requireNonNull(hamiCoreCacheRoot, "hamiCoreCacheRoot"))),
                MpsDaemonMode.EXTERNAL);
    }

    /** No back end; the other settings at their defaults; the MPS supervisor ticked every second. */
    public static SharingOptions defaults() {
        return new SharingOptions(SharingBackend.NONE, MpsLayout.DEFAULT_ROOT, Path.of(ProcessMpsControl.BINARY), Optional.empty(),
                DEFAULT_HAMI_CORE_LIBRARY, DEFAULT_HAMI_CORE_CACHE_ROOT, Path.of(HamiCoreSharing.CONTAINER_LOCK_DIR), Duration.ofSeconds(1),
                Optional.of(HamiCoreSharing.defaultPreloadFile(DEFAULT_HAMI_CORE_CACHE_ROOT)), MpsDaemonMode.EXTERNAL);
    }

    /**
     * The options among an agent's parsed flags (flag to value; other flags are ignored). Checks what
     * {@link #open()} checks, so that a node without HAMi-core's library is refused at the command line.
     *
     * @throws IllegalArgumentException naming the flag and the value: an unknown back end, a relative path, a
     *                                  flag of a back end not chosen, a missing {@code libvgpu.so}
     */
    public static SharingOptions parse(Map<String, String> opts) {
        SharingOptions d = defaults();
        try {
            SharingBackend backend = opts.containsKey(SharingBackend.FLAG) ? SharingBackend.parse(opts.get(SharingBackend.FLAG)) : SharingBackend.NONE;
            for (String flag : FLAGS) {
                if (opts.containsKey(flag) && !flag.equals(SharingBackend.FLAG)) {
                    String wants = flag.startsWith("--mps-") ? SharingBackend.MPS.wireName() : SharingBackend.HAMI_CORE.wireName();
                    if (!wants.equals(backend.wireName())) {
                        throw new InvalidValueException(flag, opts.get(flag), "only with --sharing " + wants + " (--sharing is "
                                + backend.wireName() + ")");
                    }
                }
            }
            SharingOptions o = new SharingOptions(backend,
                    absolute(opts, "--mps-root", d.mpsRoot()),
                    Optional.ofNullable(opts.get("--mps-control")).map(Path::of).orElse(d.mpsControl()),
                    Optional.ofNullable(opts.get("--mps-shm-dir")).map(v -> absolute(opts, "--mps-shm-dir", null)),
                    absolute(opts, HamiCoreSharing.LIBRARY_FLAG, d.hamiCoreLibrary()),
                    absolute(opts, "--hami-core-cache-root", d.hamiCoreCacheRoot()),
                    absolute(opts, "--hami-core-lock-dir", d.hamiCoreLockDir()),
                    d.mpsTickEvery());
            o = o.withHamiCorePreloadFile(hamiCorePreloadFile(opts, o.hamiCoreCacheRoot()))
                    .withMpsDaemons(opts.containsKey(MpsDaemonMode.FLAG) ? MpsDaemonMode.parse(opts.get(MpsDaemonMode.FLAG)) : d.mpsDaemons());
            o.open();
            return o;
        } catch (InvalidValueException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    /** These options with the MPS supervisor ticked this often (zero: never). */
    public SharingOptions withMpsTickEvery(Duration every) {
        return new SharingOptions(backend, mpsRoot, mpsControl, mpsShmDir, hamiCoreLibrary, hamiCoreCacheRoot, hamiCoreLockDir, every,
                hamiCorePreloadFile, mpsDaemons);
    }

    /** These options with HAMi-core's library loaded through this node file, or through {@code LD_PRELOAD} when empty. */
    public SharingOptions withHamiCorePreloadFile(Optional<Path> file) {
        return new SharingOptions(backend, mpsRoot, mpsControl, mpsShmDir, hamiCoreLibrary, hamiCoreCacheRoot, hamiCoreLockDir, mpsTickEvery,
                file, mpsDaemons);
    }

    /**
     * {@code --hami-core-preload} and {@code --hami-core-preload-file}: the node file, by default beside the cache root;
     * empty with {@code --hami-core-preload env}.
     *
     * @throws InvalidValueException naming the flag and the value: a mode other than file or env, a relative path, a
     *                               file with {@code --hami-core-preload env}
     */
    private static Optional<Path> hamiCorePreloadFile(Map<String, String> opts, Path cacheRoot) {
        String mode = opts.getOrDefault(HamiCoreSharing.PRELOAD_FLAG, HamiCoreSharing.PRELOAD_BY_FILE);
        boolean byFile = HamiCoreSharing.preloadByFile(mode);
        if (!byFile) {
            if (opts.containsKey(HamiCoreSharing.PRELOAD_FILE_FLAG)) {
                throw new InvalidValueException(HamiCoreSharing.PRELOAD_FILE_FLAG, opts.get(HamiCoreSharing.PRELOAD_FILE_FLAG),
                        "only with " + HamiCoreSharing.PRELOAD_FLAG + " " + HamiCoreSharing.PRELOAD_BY_FILE + " ("
                                + HamiCoreSharing.PRELOAD_FLAG + " is " + mode + ")");
            }
            return Optional.empty();
        }
        return Optional.of(absolute(opts, HamiCoreSharing.PRELOAD_FILE_FLAG, HamiCoreSharing.defaultPreloadFile(cacheRoot)));
    }

    /** These options with {@code --mps-daemons} set to this mode. */
    public SharingOptions withMpsDaemons(MpsDaemonMode mode) {
        return new SharingOptions(backend, mpsRoot, mpsControl, mpsShmDir, hamiCoreLibrary, hamiCoreCacheRoot, hamiCoreLockDir, mpsTickEvery,
                hamiCorePreloadFile, mode);
    }

    /** The MPS shared-memory directory on the node: {@code --mps-shm-dir}, else {@code <mps-root>/shm}. */
    public Path mpsShmDirectory() {
        return mpsShmDir.orElse(mpsLayout().defaultShmDir());
    }

    /** The MPS daemons' directories. */
    public MpsLayout mpsLayout() {
        return new MpsLayout(mpsRoot);
    }

    /**
     * The node's back end.
     *
     * @throws InvalidValueException naming {@code --hami-core-library} when HAMi-core is chosen and its library is missing
     */
    public NodeSharing open() {
        return switch (backend) {
            case NONE -> NodeSharing.none();
            case MPS -> NodeSharing.open(backend, new MpsSharing(mpsLayout(), MpsSharing.CONTAINER_PIPE_DIR, Optional.of(mpsShmDirectory())),
                    null);
            case HAMI_CORE -> NodeSharing.open(backend, null, new HamiCoreSharing(hamiCoreLibrary, HamiCoreSharing.CONTAINER_LIBRARY,
                    hamiCoreCacheRoot, HamiCoreSharing.CONTAINER_CACHE_DIR, hamiCoreLockDir,
                    hamiCorePreloadFile));
        };
    }

    /**
     * With {@code --sharing mps}: a supervisor of the node's MPS control daemons on this ticker (not yet sharing any
     * GPU), starting daemons itself or not as {@code --mps-daemons} says.
     */
    public Optional<MpsSupervisor> supervisor(Ticker ticker) {
        if (backend != SharingBackend.MPS) {
            return Optional.empty();
        }
        return Optional.of(new MpsSupervisor(new ProcessMpsControl(mpsControl, mpsLayout(), MPS_COMMAND_TIMEOUT), mpsDaemons,
                MpsSupervisor.Settings.defaults(), ticker));
    }

    private static Path absolute(Map<String, String> opts, String flag, Path fallback) {
        String v = opts.get(flag);
        if (v == null) {
            return fallback;
        }
        Path p = Path.of(v);
        if (!p.isAbsolute()) {
            throw new InvalidValueException(flag, v, "must be an absolute path");
        }
        return p;
    }
}
