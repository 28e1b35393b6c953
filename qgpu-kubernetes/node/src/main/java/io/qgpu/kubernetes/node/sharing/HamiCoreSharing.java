package io.qgpu.kubernetes.node.sharing;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * What a container on a HAMi-core-shared GPU needs, as a pure function of its {@link Placement} and a key
 * naming the container:
 * <ul>
 *   <li>{@value #ENV_PRELOAD}: HAMi-core's {@code libvgpu.so}, mounted read-only from the node's
 *       {@code hostLibrary} at {@code containerLibrary};</li>
 *   <li>{@value #ENV_MEMORY_LIMIT}{@code _<i>} per visible GPU {@code i}: the slice's memory as {@code <n>m},
 *       {@code n} in MiB rounded down (never above the reservation);</li>
 *   <li>{@value #ENV_SM_LIMIT}: the claim's compute limit in percent;</li>
 *   <li>{@value #ENV_SHARED_CACHE}: the container's own shared-cache file, in a per-container host directory
 *       ({@code hostCacheRoot/<key>}, listed in {@link SharingEdits#hostDirectories()}) mounted read-write at
 *       {@code containerCacheDir}: HAMi-core's processes in the container account their allocations together
 *       there;</li>
 *   <li>the node's HAMi-core lock directory mounted read-write at {@value #CONTAINER_LOCK_DIR}, where
 *       HAMi-core takes its lock across processes.</li>
 * </ul>
 * An exclusive or host-only claim gets {@link SharingEdits#none()}: nothing shares its GPUs.
 *
 * <pre>{@code
 * HamiCoreSharing hami = HamiCoreSharing.of(Path.of("/usr/local/vgpu/libvgpu.so"), Path.of("/var/lib/qgpu/hami"));
 * hami.checkLibrary();                               // refuses a node without the library
 * SharingEdits e = hami.edits(placement, "pod-1_main");   // 8 GiB on one GPU, limit 70%:
 * e.env();  // {QGPU_SHARING=hami-core, LD_PRELOAD=/usr/local/vgpu/libvgpu.so, CUDA_DEVICE_MEMORY_LIMIT_0=8192m,
 *           //  CUDA_DEVICE_SM_LIMIT=70, CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/cache/vgpu.cache}
 * }</pre>
 *
 * @param hostLibrary       {@code libvgpu.so} on the node
 * @param containerLibrary  where it is mounted in the container
 * @param hostCacheRoot     node directory under which each container gets its cache directory
 * @param containerCacheDir where the container's cache directory is mounted
 * @param hostLockDir       the node's HAMi-core lock directory
 *
 * <p>Thread safety: immutable.
 */
public record HamiCoreSharing(Path hostLibrary, String containerLibrary, Path hostCacheRoot, String containerCacheDir,
                              Path hostLockDir) {
    /** The flag that names {@code hostLibrary}. */
    public static final String LIBRARY_FLAG = "--hami-core-library";
    /** Preloads the interposer. */
    public static final String ENV_PRELOAD = "LD_PRELOAD";
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
        absolute(LIBRARY_FLAG, hostLibrary);
        absolute("--hami-core-cache-root", hostCacheRoot);
        absolute("--hami-core-lock-dir", hostLockDir);
        if (!containerLibrary.startsWith("/") || !containerCacheDir.startsWith("/")) {
            throw new InvalidValueException("hami-core.containerPaths", containerLibrary + ", " + containerCacheDir,
                    "must be absolute paths");
        }
    }

    /** The defaults for a library and a cache root: container paths as HAMi uses them, lock directory {@value #CONTAINER_LOCK_DIR}. */
    public static HamiCoreSharing of(Path hostLibrary, Path hostCacheRoot) {
        return new HamiCoreSharing(hostLibrary, CONTAINER_LIBRARY, hostCacheRoot, CONTAINER_CACHE_DIR, Path.of(CONTAINER_LOCK_DIR));
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
        env.put(ENV_PRELOAD, containerLibrary);
        // a shared claim reserves the same memory on each GPU, so CUDA's enumeration order does not matter
        List<Slice> slices = p.slices();
        for (int i = 0; i < slices.size(); i++) {
            Slice s = slices.get(i);
            env.put(ENV_MEMORY_LIMIT + "_" + i, Mib.floor(f + ".slices[" + s.gpuUuid() + "].memoryBytes", s.memoryBytes()) + "m");
        }
        env.put(ENV_SM_LIMIT, Integer.toString(p.claim().computeLimit()));
        env.put(ENV_SHARED_CACHE, containerCacheDir + "/" + CACHE_FILE);
        Path cacheDir = hostCacheRoot.resolve(containerKey);
        List<SharingEdits.Mount> mounts = List.of(
                new SharingEdits.Mount(hostLibrary.toString(), containerLibrary, true),
                new SharingEdits.Mount(cacheDir.toString(), containerCacheDir, false),
                new SharingEdits.Mount(hostLockDir.toString(), CONTAINER_LOCK_DIR, false));
        return new SharingEdits(env, mounts, List.of(cacheDir.toString(), hostLockDir.toString()));
    }

    private static void absolute(String flag, Path p) {
        if (!p.isAbsolute()) {
            throw new InvalidValueException(flag, p.toString(), "must be an absolute path");
        }
    }
}
