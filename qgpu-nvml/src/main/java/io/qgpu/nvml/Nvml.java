package io.qgpu.nvml;

import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;
import io.qgpu.api.Health;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Validate;
import io.qgpu.api.spi.GpuHealthEvent;
import io.qgpu.api.spi.GpuHealthListener;
import io.qgpu.nvml.internal.LibraryPaths;
import io.qgpu.nvml.internal.NvmlLibrary;
import io.qgpu.nvml.internal.NvmlNative;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An open NVML session: the entry point of the binding. Opening takes a reference on the loaded
 * library (the first one calls {@code nvmlInit_v2}); {@link #close()} gives it back (the last one calls
 * {@code nvmlShutdown}), so sessions may be opened and closed freely from anywhere in a process.
 *
 * <pre>{@code
 * try (Nvml nvml = Nvml.builder().libraryPath(Path.of("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")).open()) {
 *     for (NvmlDevice gpu : nvml.devices()) {
 *         log.info("{}", gpu.index() + " " + gpu.uuid() + " " + gpu.name() + " " + gpu.memory().total());
 *     }
 * }
 * }</pre>
 *
 * <p>The library is {@code libnvidia-ml.so.1} from the loader's search path unless the system property
 * {@code qgpu.nvml.library} or {@link Builder#libraryPath(Path)} names another. A missing library or a
 * missing required function is reported as {@link NvmlLibraryException} when opening; no
 * {@link UnsatisfiedLinkError} escapes from any method.
 *
 * <p>Every failing NVML call throws {@link NvmlException} with its typed return code. A call that gets
 * {@code GPU_IS_LOST} marks that GPU {@link Health#UNHEALTHY} in this session and tells the
 * {@linkplain #addHealthListener health listeners}.
 *
 * <p>Thread safety: thread-safe. NVML itself is thread-safe, and any number of threads may call one
 * session and its devices at once. {@link #close()} waits for calls in flight on this session to end;
 * later calls throw {@link NvmlException} with {@link NvmlReturn#UNINITIALIZED}. Health listeners are
 * called on the thread that saw the change.
 */
public final class Nvml implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Nvml.class);
    static final int STRING_BUFFER = 96;
    static final int VERSION_BUFFER = 80;
    private static final int MAX_STRING_BUFFER = 1 << 16;

    private final NvmlLibrary library;
    private final ReentrantReadWriteLock gate = new ReentrantReadWriteLock();
    private volatile boolean closed;
    private final Map<Long, NvmlDevice> devicesByHandle = new ConcurrentHashMap<>();
    private final Map<String, Health> health = new ConcurrentHashMap<>();
    private final List<GpuHealthListener> listeners = new CopyOnWriteArrayList<>();

    private Nvml(NvmlLibrary library) {
        this.library = library;
    }

    /** A session on the default library (see the class comment). */
    public static Nvml open() {
        return builder().open();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The library name or path this session uses. */
    public String library() {
        return library.name();
    }

    /** The driver version, for example {@code 580.65.06}. */
    public String driverVersion() {
        return readString("nvmlSystemGetDriverVersion", null, VERSION_BUFFER,
                (api, buf, len) -> api.nvmlSystemGetDriverVersion(buf, len));
    }

    /** The NVML version, for example {@code 13.580.65.06}. */
    public String nvmlVersion() {
        return readString("nvmlSystemGetNVMLVersion", null, VERSION_BUFFER,
                (api, buf, len) -> api.nvmlSystemGetNVMLVersion(buf, len));
    }

    /** Number of GPUs NVML sees (those this process may access). */
    public int deviceCount() {
        IntByReference count = new IntByReference();
        check("nvmlDeviceGetCount_v2", null, call("nvmlDeviceGetCount_v2", api -> api.nvmlDeviceGetCount_v2(count)));
        return toIntExact("deviceCount", Integer.toUnsignedLong(count.getValue()));
    }

    /**
     * The GPU at this NVML index; its UUID is read at once.
     *
     * @throws InvalidValueException if the index is negative
     * @throws NvmlException         if NVML refuses (for example {@code INVALID_ARGUMENT} past the count)
     */
    public NvmlDevice device(int index) {
        Validate.atLeast("nvml.device.index", index, 0);
        PointerByReference ref = new PointerByReference();
        String where = "index " + index;
        check("nvmlDeviceGetHandleByIndex_v2", where,
                call("nvmlDeviceGetHandleByIndex_v2", api -> api.nvmlDeviceGetHandleByIndex_v2(index, ref)));
        return deviceForHandle(ref.getValue(), where);
    }

    /** The GPU with this UUID; {@code NOT_FOUND} if there is none. */
    public NvmlDevice deviceByUuid(String uuid) {
        Validate.notBlank("nvml.device.uuid", uuid);
        PointerByReference ref = new PointerByReference();
        check("nvmlDeviceGetHandleByUUID", uuid,
                call("nvmlDeviceGetHandleByUUID", api -> api.nvmlDeviceGetHandleByUUID(uuid, ref)));
        return deviceForHandle(ref.getValue(), uuid);
    }

    /** Every GPU, by index. */
    public List<NvmlDevice> devices() {
        int n = deviceCount();
        List<NvmlDevice> all = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            all.add(device(i));
        }
        return List.copyOf(all);
    }

    /** A new event set; close it when done. */
    public NvmlEventSet createEventSet() {
        PointerByReference ref = new PointerByReference();
        check("nvmlEventSetCreate", null, call("nvmlEventSetCreate", api -> api.nvmlEventSetCreate(ref)));
        return new NvmlEventSet(this, ref.getValue());
    }

    // ---- health -------------------------------------------------------------------------------------

    /** This session's view of a GPU's health: unhealthy once an Xid or {@code GPU_IS_LOST} was seen. */
    public Health health(String gpuUuid) {
        return health.getOrDefault(gpuUuid, Health.HEALTHY);
    }

    /** UUIDs of the GPUs this session considers unhealthy, sorted. */
    public Set<String> unhealthyGpus() {
        Set<String> out = new TreeSet<>();
        health.forEach((uuid, h) -> {
            if (h == Health.UNHEALTHY) {
                out.add(uuid);
            }
        });
        return out;
    }

    /**
     * Tells {@code listener} of every later health change in this session. Close the returned handle to
     * stop.
     */
    public Registration addHealthListener(GpuHealthListener listener) {
        Validate.notNull("nvml.healthListener", listener);
        listeners.add(listener);
        return () -> listeners.remove(listener);
    }

    /**
     * Records a health change and, if the GPU's health really changed, tells the listeners.
     *
     * @return whether the health changed
     */
    public boolean reportHealth(GpuHealthEvent event) {
        Validate.notNull("nvml.healthEvent", event);
        Health previous = health.put(event.gpuUuid(), event.health());
        Health before = previous == null ? Health.HEALTHY : previous;
        if (before == event.health()) {
            return false;
        }
        LOG.warn("GPU {} is now {}: {}", event.gpuUuid(), event.health(), event.cause());
        for (GpuHealthListener l : listeners) {
            try {
                l.onHealthChange(event);
            } catch (RuntimeException e) {
                LOG.error("health listener {} failed on {}", l, event, e);
            }
        }
        return true;
    }

    /** A handle that undoes a registration. */
    @FunctionalInterface
    public interface Registration extends AutoCloseable {
        @Override
        void close();
    }

    // ---- lifecycle ----------------------------------------------------------------------------------

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return closed;
    }

    /** Gives back this session's reference on NVML; idempotent. Waits for calls in flight. */
    @Override
    public void close() {
        gate.writeLock().lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
        } finally {
            gate.writeLock().unlock();
        }
        library.release();
    }

    // ---- plumbing shared with NvmlDevice and NvmlEventSet --------------------------------------------

    @FunctionalInterface
    interface NativeCall {
        int invoke(NvmlNative api);
    }

    @FunctionalInterface
    interface StringCall {
        int invoke(NvmlNative api, byte[] buffer, int length);
    }

    /** Runs one native call inside the session gate; link errors become {@link NvmlLibraryException}. */
    int call(String function, NativeCall c) {
        gate.readLock().lock();
        try {
            if (closed) {
                throw new NvmlException(function, NvmlReturn.UNINITIALIZED.code(), null,
                        "this Nvml session is closed", null);
            }
            return c.invoke(library.api());
        } catch (UnsatisfiedLinkError e) {
            throw new NvmlLibraryException(function, NvmlReturn.FUNCTION_NOT_FOUND, library.name(),
                    "the library does not export " + function, e);
        } finally {
            gate.readLock().unlock();
        }
    }

    /** Throws for a failing return code; {@code GPU_IS_LOST} on a known GPU marks it unhealthy first. */
    void check(String function, @Nullable String gpu, int rc) {
        if (rc == NvmlReturn.SUCCESS.code()) {
            return;
        }
        if (rc == NvmlReturn.GPU_IS_LOST.code() && gpu != null && gpu.startsWith("GPU-")) {
            gpuLost(gpu, function);
        }
        throw new NvmlException(function, rc, gpu);
    }

    void gpuLost(String uuid, String function) {
        reportHealth(GpuHealthEvent.of(uuid, Health.UNHEALTHY, "NVML_ERROR_GPU_IS_LOST from " + function));
    }

    boolean hasOptional(String symbol) {
        return library.has(symbol);
    }

    /** Reads a C string, growing the buffer on {@code INSUFFICIENT_SIZE}. */
    String readString(String function, @Nullable String gpu, int initial, StringCall c) {
        int size = initial;
        while (true) {
            byte[] buf = new byte[size];
            int len = size;
            int rc = call(function, api -> c.invoke(api, buf, len));
            if (rc == NvmlReturn.INSUFFICIENT_SIZE.code() && size < MAX_STRING_BUFFER) {
                size *= 2;
                continue;
            }
            check(function, gpu, rc);
            return Native.toString(buf, StandardCharsets.UTF_8.name());
        }
    }

    /** The device object for a handle, created once per handle (reads the UUID the first time). */
    NvmlDevice deviceForHandle(Pointer handle, String where) {
        if (handle == null) {
            throw new NvmlException("nvmlDeviceGetHandle", NvmlReturn.UNKNOWN.code(), where,
                    "NVML returned a null device handle", null);
        }
        long key = Pointer.nativeValue(handle);
        NvmlDevice known = devicesByHandle.get(key);
        if (known != null) {
            return known;
        }
        String uuid = readString("nvmlDeviceGetUUID", where, STRING_BUFFER,
                (api, buf, len) -> api.nvmlDeviceGetUUID(handle, buf, len));
        NvmlDevice created = new NvmlDevice(this, handle, uuid);
        NvmlDevice raced = devicesByHandle.putIfAbsent(key, created);
        return raced != null ? raced : created;
    }

    static int toIntExact(String field, long value) {
        if (value > Integer.MAX_VALUE) {
            throw new InvalidValueException("nvml." + field, value, "does not fit in an int");
        }
        return (int) value;
    }

    /**
     * Options for opening a session.
     *
     * <pre>{@code
     * Nvml nvml = Nvml.builder().libraryPath(Path.of("target/fake-nvml/libnvidia-ml.so.1")).open();
     * }</pre>
     *
     * <p>Thread safety: not thread-safe; use from one thread.
     */
    public static final class Builder {
        private @Nullable String library;
        private int initFlags;

        private Builder() {
        }

        /** The library file to load (overrides the system property {@code qgpu.nvml.library}). */
        public Builder libraryPath(Path path) {
            Validate.notNull("nvml.libraryPath", path);
            this.library = path.toAbsolutePath().toString();
            return this;
        }

        /** A library name for the loader to find, for example {@code libnvidia-ml.so.1}. */
        public Builder libraryName(String name) {
            this.library = Validate.notBlank("nvml.libraryName", name);
            return this;
        }

        /**
         * Flags for {@code nvmlInitWithFlags} (0, the default, calls {@code nvmlInit_v2}). Only the session
         * that initializes NVML chooses them; opening another session with other flags while one is open
         * is refused.
         */
        public Builder initFlags(int flags) {
            this.initFlags = Validate.atLeast("nvml.initFlags", flags, 0);
            return this;
        }

        /**
         * Loads the library if needed and takes a reference on NVML's initialization.
         *
         * @throws NvmlLibraryException if the library or a required function is missing
         * @throws NvmlException        if NVML fails to initialize (for example {@code DRIVER_NOT_LOADED})
         */
        public Nvml open() {
            NvmlLibrary lib = resolve();
            lib.acquire(initFlags);
            return new Nvml(lib);
        }

        private NvmlLibrary resolve() {
            if (library != null) {
                return NvmlLibrary.get(library);
            }
            List<String> candidates = LibraryPaths.candidates();
            NvmlLibraryException first = null;
            for (String c : candidates) {
                try {
                    return NvmlLibrary.get(c);
                } catch (NvmlLibraryException e) {
                    if (e.result() == NvmlReturn.FUNCTION_NOT_FOUND) {
                        throw e;
                    }
                    if (first == null) {
                        first = e;
                    }
                }
            }
            throw new NvmlLibraryException("load", NvmlReturn.LIBRARY_NOT_FOUND, String.join(" or ", candidates),
                    "not found. Is the NVIDIA driver installed? Point qgpu at the library with -D"
                            + LibraryPaths.PROPERTY + "=/path/to/libnvidia-ml.so.1", first);
        }
    }
}
