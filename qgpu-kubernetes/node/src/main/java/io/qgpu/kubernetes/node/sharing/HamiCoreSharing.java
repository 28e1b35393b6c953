package io.qgpu.kubernetes.node.sharing;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import io.qgpu.kubernetes.node.ContainerEdits;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * What a container on a HAMi-core-shared GPU needs, as a pure function of its {@link Placement} and a key
 * naming the container:
 * <ul>
 *   <li>HAMi-core's {@code libvgpu.so}, mounted read-only from the node's {@code hostLibrary} at
 *       {@code containerLibrary}, and loaded into every dynamically linked process of the container:
 *       <ul>
 *         <li>by default through the node file {@code hostPreloadFile} (it holds {@code containerLibrary} and a
 *             newline, listed in {@link SharingEdits#hostPaths()} as a {@link SharingEdits.HostFile}), mounted
 *             read-only at {@value #CONTAINER_PRELOAD_FILE}: the dynamic loader reads that file in every process,
 *             whatever its environment says, so a process that drops {@value #ENV_PRELOAD} or starts with
 *             {@code env -i} still loads the library (as HAMi mounts it);</li>
 *         <li>with {@code --hami-core-preload env} ({@code hostPreloadFile} empty) through {@value #ENV_PRELOAD}
 *             instead, which a process can drop;</li>
 *       </ul></li>
 *   <li>{@value #ENV_MEMORY_LIMIT}{@code _<i>} per visible GPU {@code i}: the slice's memory as {@code <n>m},
 *       {@code n} in MiB rounded down (never above the reservation);</li>
 *   <li>{@value #ENV_SM_LIMIT}: the claim's compute limit in percent;</li>
 *   <li>{@value #ENV_SHARED_CACHE}: the container's own shared-cache file, in a per-container host directory
 *       ({@code hostCacheRoot/<key>}, listed fresh in {@link SharingEdits#hostPaths()}: emptied before the
 *       container starts) mounted read-write at
 *       {@code containerCacheDir}: HAMi-core's processes in the container account their allocations together
 *       there;</li>
 *   <li>the node's HAMi-core lock directory mounted read-write at {@value #CONTAINER_LOCK_DIR}, where
 *       HAMi-core takes its lock across processes.</li>
 * </ul>
 * An exclusive or host-only claim gets {@link SharingEdits#none()}: nothing shares its GPUs.
 *
 * <pre>{@code
 * HamiCoreSharing hami = HamiCoreSharing.of(Path.of("/usr/local/vgpu/libvgpu.so"), Path.of("/var/lib/qgpu/hami-core"));
 * hami.checkLibrary();                               // refuses a node without the library
 * SharingEdits e = hami.edits(placement, "pod-1_main");   // 8 GiB on one GPU, limit 70%:
 * e.env();  // {QGPU_SHARING=hami-core, CUDA_DEVICE_MEMORY_LIMIT_0=8192m, CUDA_DEVICE_SM_LIMIT=70,
 *           //  CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/cache/vgpu.cache}
 * e.mounts().get(1);   // /var/lib/qgpu/hami-core-preload/ld.so.preload -> /etc/ld.so.preload, read-only
 * hami.withPreloadFile(Optional.empty()).edits(placement, "pod-1_main").env().get("LD_PRELOAD");   // the library
 * }</pre>
 *
 * @param hostLibrary       {@code libvgpu.so} on the node
 * @param containerLibrary  where it is mounted in the container
 * @param hostCacheRoot     node directory under which each container gets its cache directory
 * @param containerCacheDir where the container's cache directory is mounted
 * @param hostLockDir       the node's HAMi-core lock directory
 * @param hostPreloadFile   the node file mounted at {@value #CONTAINER_PRELOAD_FILE} ({@code --hami-core-preload file},
 *                          the default: {@link #defaultPreloadFile}); empty: {@value #ENV_PRELOAD} instead
 *                          ({@code --hami-core-preload env})
 *
 * <p>Thread safety: immutable.
 */
public record HamiCoreSharing(Path hostLibrary, String containerLibrary, Path hostCacheRoot, String containerCacheDir,
                              Path hostLockDir,
                              Optional<Path> hostPreloadFile) {
    /** The flag that names {@code hostLibrary}. */
    public static final String LIBRARY_FLAG = "--hami-core-library";
    /** Preloads the interposer, with {@code --hami-core-preload env} only. */
    public static final String ENV_PRELOAD = "LD_PRELOAD";
    /** The flag that chooses how the library is loaded: {@value #PRELOAD_BY_FILE} (the default) or {@value #PRELOAD_BY_ENV}. */
    public static final String PRELOAD_FLAG = "--hami-core-preload";
    /** The flag that names {@code hostPreloadFile}. */
    public static final String PRELOAD_FILE_FLAG = "--hami-core-preload-file";
    /** {@value #PRELOAD_FLAG} value: the node file mounted at {@value #CONTAINER_PRELOAD_FILE}. */
    public static final String PRELOAD_BY_FILE = "file";
    /** {@value #PRELOAD_FLAG} value: {@value #ENV_PRELOAD} in the container's environment. */
    public static final String PRELOAD_BY_ENV = "env";
    /** Where the dynamic loader reads the libraries it loads into every process. */
    public static final String CONTAINER_PRELOAD_FILE = "/etc/ld.so.preload";
    /** The default preload file's directory, beside the cache root ({@link #defaultPreloadFile}). */
    public static final String PRELOAD_DIR = "hami-core-preload";
    /** Device-memory limit; HAMi-core reads {@code _<i>} per device (falling back to the bare name). */
    public static final String ENV_MEMORY_LIMIT = "CUDA_DEVICE_MEMORY_LIMIT";
    /** Compute limit in percent of each device's SMs. */
    public static final String ENV_SM_LIMIT = "CUDA_DEVICE_SM_LIMIT";
    /** The shared-region cache file of the container's processes (HAMi-core's default is {@code /tmp/cudevshr.cache}). */
    public static final String ENV_SHARED_CACHE = "CUDA_DEVICE_MEMORY_SHARED_CACHE";
    /** HAMi-core's lock directory; the path is fixed in HAMi-core. */
    public static final String CONTAINER_LOCK_DIR = "/tmp/vgpulock";
    /** The cache file's name in the container's cache directory. */
    public static final String CACHE_FILE = "vgpu.cache";
    /** Default container path of the library. */
    public static final String CONTAINER_LIBRARY = "/usr/local/vgpu/libvgpu.so";
    /** Default container path of the cache directory. */
    public static final String CONTAINER_CACHE_DIR = "/usr/local/vgpu/cache";

    private static final Pattern KEY = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,252}");

    public HamiCoreSharing {
        Objects.requireNonNull(hostLibrary, "hostLibrary");
        Objects.requireNonNull(containerLibrary, "containerLibrary");
        Objects.requireNonNull(hostCacheRoot, "hostCacheRoot");
        Objects.requireNonNull(containerCacheDir, "containerCacheDir");
        Objects.requireNonNull(hostLockDir, "hostLockDir");
        Objects.requireNonNull(hostPreloadFile, "hostPreloadFile");
        absolute(LIBRARY_FLAG, hostLibrary);
        absolute("--hami-core-cache-root", hostCacheRoot);
        absolute("--hami-core-lock-dir", hostLockDir);
        if (hostPreloadFile.isPresent()) {
            Path f = hostPreloadFile.get();
            absolute(PRELOAD_FILE_FLAG, f);
            if (f.getFileName() == null) {
                throw new InvalidValueException(PRELOAD_FILE_FLAG, f.toString(), "must name a file");
            }
            if (f.normalize().startsWith(hostCacheRoot.normalize())) {
                throw new InvalidValueException(PRELOAD_FILE_FLAG, f.toString(), "must not be under --hami-core-cache-root ("
                        + hostCacheRoot + "): the agent removes what no container owns there");
            }
        }
        if (!containerLibrary.startsWith("/") || !containerCacheDir.startsWith("/")) {
            throw new InvalidValueException("hami-core.containerPaths", containerLibrary + ", " + containerCacheDir,
                    "must be absolute paths");
        }
    }

    /**
     * The defaults for a library and a cache root: container paths as HAMi uses them, lock directory
     * {@value #CONTAINER_LOCK_DIR}, the library loaded through {@link #defaultPreloadFile the default preload file}.
     */
    public static HamiCoreSharing of(Path hostLibrary, Path hostCacheRoot) {
        return new HamiCoreSharing(hostLibrary, CONTAINER_LIBRARY, hostCacheRoot, CONTAINER_CACHE_DIR, Path.of(CONTAINER_LOCK_DIR),
                Optional.of(defaultPreloadFile(hostCacheRoot)));
    }

    /**
     * The default of {@value #PRELOAD_FILE_FLAG}: {@code ld.so.preload} in a directory of its own beside the cache
     * root, {@code <cache root's parent>/}{@value #PRELOAD_DIR}{@code /ld.so.preload}
     * ({@code /var/lib/qgpu/hami-core-preload/ld.so.preload} for the default cache root); not under the cache root,
     * whose other entries the agents remove.
     */
    public static Path defaultPreloadFile(Path hostCacheRoot) {
        Path root = hostCacheRoot.toAbsolutePath().normalize();
        Path parent = root.getParent();
        return (parent == null ? root : parent).resolve(PRELOAD_DIR).resolve("ld.so.preload");
    }

    /** These settings with the library loaded through this node file, or through {@value #ENV_PRELOAD} when empty. */
    public HamiCoreSharing withPreloadFile(Optional<Path> file) {
        return new HamiCoreSharing(hostLibrary, containerLibrary, hostCacheRoot, containerCacheDir, hostLockDir, file);
    }

    /**
     * {@value #PRELOAD_FLAG}'s value as the agents take it.
     *
     * @return whether the library is loaded through the preload file ({@value #PRELOAD_BY_FILE}) rather than
     *         {@value #ENV_PRELOAD} ({@value #PRELOAD_BY_ENV})
     * @throws InvalidValueException naming {@value #PRELOAD_FLAG} and the value when it is neither
     */
    public static boolean preloadByFile(String value) {
        if (PRELOAD_BY_FILE.equals(value)) {
            return true;
        }
        if (PRELOAD_BY_ENV.equals(value)) {
            return false;
        }
        throw new InvalidValueException(PRELOAD_FLAG, value, "must be one of " + PRELOAD_BY_FILE + ", " + PRELOAD_BY_ENV);
    }

    /** The content of the preload file: the container path of the library and a newline. */
    public String preloadFileContent() {
        return containerLibrary + "\n";
    }

    /**
     * Refuses a node where the library is missing: a container would start without any limit enforced.
     *
     * @throws InvalidValueException naming {@value #LIBRARY_FLAG} and the path, and why
     */
    public void checkLibrary() {
        if (!Files.exists(hostLibrary)) {
            throw new InvalidValueException(LIBRARY_FLAG, hostLibrary.toString(),
                    "no such file: --sharing hami-core needs HAMi-core's libvgpu.so on the node (build it from HAMi-core, "
                            + "or run with --sharing none or mps)");
        }
        if (!Files.isRegularFile(hostLibrary)) {
            throw new InvalidValueException(LIBRARY_FLAG, hostLibrary.toString(), "is not a regular file: --sharing hami-core needs HAMi-core's libvgpu.so");
        }
        if (!Files.isReadable(hostLibrary)) {
            throw new InvalidValueException(LIBRARY_FLAG, hostLibrary.toString(), "is not readable by the node agent");
        }
    }

    /**
     * The container's edits.
     *
     * @param containerKey names the container on the node, unique while it runs (e.g. {@code <pod uid>_<container>}):
     *                     its cache directory is {@code hostCacheRoot/<containerKey>}
     * @throws InvalidValueException for a key that is not a plain file name, or a slice below 1 MiB
     */
    public SharingEdits edits(Placement p, String containerKey) {
        if (p.claim().hostOnly() || p.claim().exclusive()) {
            return SharingEdits.none();
        }
        if (containerKey == null || !KEY.matcher(containerKey).matches()) {
            throw new InvalidValueException("containerKey", containerKey, "must be 1 to 253 of A-Z a-z 0-9 . _ -, not starting with . _ -");
        }
        String f = "placement[" + p.tenantId() + "]";
        Map<String, String> env = new LinkedHashMap<>();
        env.put(SharingEdits.ENV_SHARING, SharingBackend.HAMI_CORE.wireName());
        if (hostPreloadFile.isEmpty()) {
            env.put(ENV_PRELOAD, containerLibrary);
        }
        // a shared claim reserves the same memory on each GPU, so CUDA's enumeration order does not matter
        List<Slice> slices = p.slices();
        for (int i = 0; i < slices.size(); i++) {
            Slice s = slices.get(i);
            env.put(ENV_MEMORY_LIMIT + "_" + i, Mib.floor(f + ".slices[" + s.gpuUuid() + "].memoryBytes", s.memoryBytes()) + "m");
        }
        env.put(ENV_SM_LIMIT, Integer.toString(p.claim().computeLimit()));
        env.put(ENV_SHARED_CACHE, containerCacheDir + "/" + CACHE_FILE);
        Path cacheDir = hostCacheRoot.resolve(containerKey);
        List<ContainerEdits.Mount> mounts = new ArrayList<>();
        mounts.add(ContainerEdits.Mount.bind(hostLibrary.toString(), containerLibrary, true));
        hostPreloadFile.ifPresent(file -> mounts.add(ContainerEdits.Mount.bind(file.toString(), CONTAINER_PRELOAD_FILE, true)));
        mounts.add(ContainerEdits.Mount.bind(cacheDir.toString(), containerCacheDir, false));
        mounts.add(ContainerEdits.Mount.bind(hostLockDir.toString(), CONTAINER_LOCK_DIR, false));
        // the cache directory is the container's own and starts empty: HAMi-core's first process fixes the limits in it
        List<SharingEdits.HostPath> hostPaths = new ArrayList<>();
        hostPaths.add(new SharingEdits.HostDirectory(cacheDir.toString(), true));
        hostPaths.add(new SharingEdits.HostDirectory(hostLockDir.toString(), false));
        hostPreloadFile.ifPresent(file -> hostPaths.add(new SharingEdits.HostFile(file.toString(), preloadFileContent())));
        return SharingEdits.of(env, mounts, hostPaths);
    }

    private static void absolute(String flag, Path p) {
        if (!p.isAbsolute()) {
            throw new InvalidValueException(flag, p.toString(), "must be an absolute path");
        }
    }
}
