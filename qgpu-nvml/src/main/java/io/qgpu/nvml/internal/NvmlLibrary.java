package io.qgpu.nvml.internal;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import io.qgpu.nvml.NvmlException;
import io.qgpu.nvml.NvmlLibraryException;
import io.qgpu.nvml.NvmlReturn;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One loaded libnvidia-ml and its init reference count. {@link #acquire(int)} calls {@code nvmlInit}
 * when the count goes from 0 to 1, {@link #release()} calls {@code nvmlShutdown} when it goes back to 0,
 * so that any number of {@link io.qgpu.nvml.Nvml} sessions share one initialization.
 *
 * <p>Thread safety: thread-safe; acquire and release are serialized per library.
 */
public final class NvmlLibrary {
    private static final Logger LOG = LoggerFactory.getLogger(NvmlLibrary.class);
    private static final Map<String, NvmlLibrary> LOADED = new ConcurrentHashMap<>();

    private final String name;
    private final NvmlNative api;
    private final Set<String> presentOptional;
    private int refs;       // guarded by this
    private int activeFlags; // guarded by this

    private NvmlLibrary(String name, NvmlNative api, Set<String> presentOptional) {
        this.name = name;
        this.api = api;
        this.presentOptional = presentOptional;
    }

    /**
     * The library with this name or path, loaded once per name and checked for every required symbol.
     *
     * @throws NvmlLibraryException if it cannot be loaded or lacks a required symbol
     */
    public static NvmlLibrary get(String name) {
        NvmlLibrary lib = LOADED.get(name);
        if (lib != null) {
            return lib;
        }
        synchronized (LOADED) {
            lib = LOADED.get(name);
            if (lib == null) {
                lib = load(name);
                LOADED.put(name, lib);
            }
            return lib;
        }
    }

    private static NvmlLibrary load(String name) {
        NativeLibrary handle;
        NvmlNative api;
        try {
            handle = NativeLibrary.getInstance(name);
            api = Native.load(name, NvmlNative.class);
        } catch (UnsatisfiedLinkError | NoClassDefFoundError e) {
            throw new NvmlLibraryException("load", NvmlReturn.LIBRARY_NOT_FOUND, name,
                    "could not be loaded (" + firstLine(e.getMessage()) + "). Is the NVIDIA driver installed? "
                            + "Point qgpu at the library with -D" + LibraryPaths.PROPERTY
                            + "=/path/to/libnvidia-ml.so.1 or Nvml.builder().libraryPath(...)", e);
        }
        List<String> missing = new ArrayList<>();
        UnsatisfiedLinkError first = null;
        for (String symbol : NvmlNative.REQUIRED) {
            try {
                handle.getFunction(symbol);
            } catch (UnsatisfiedLinkError e) {
                missing.add(symbol);
                if (first == null) {
                    first = e;
                }
            }
        }
        if (!missing.isEmpty()) {
            throw new NvmlLibraryException(missing.get(0), NvmlReturn.FUNCTION_NOT_FOUND, name,
                    "lacks " + String.join(", ", missing) + " (qgpu needs NVML 12 or later: driver R525+)", first);
        }
        Set<String> optional = new HashSet<>();
        for (String symbol : NvmlNative.OPTIONAL) {
            try {
                handle.getFunction(symbol);
                optional.add(symbol);
            } catch (UnsatisfiedLinkError e) {
                LOG.debug("{} lacks optional {}", name, symbol);
            }
        }
        LOG.debug("loaded NVML from {}", name);
        return new NvmlLibrary(name, api, Set.copyOf(optional));
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "no message";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }

    /** The name or path this library was loaded by. */
    public String name() {
        return name;
    }

    /** The raw entry points. Callers must hold a reference ({@link #acquire(int)}). */
    public NvmlNative api() {
        return api;
    }

    /** Whether an optional symbol (one of {@link NvmlNative#OPTIONAL}) is present. */
    public boolean has(String optionalSymbol) {
        return presentOptional.contains(optionalSymbol);
    }

    /**
     * Takes a reference; the first one initializes NVML ({@code nvmlInit_v2}, or
     * {@code nvmlInitWithFlags} when flags are not 0).
     *
     * @throws NvmlException if NVML's init fails (the count is then unchanged), or if NVML is already
     *                       initialized with other flags
     */
    public synchronized void acquire(int flags) {
        if (refs == 0) {
            int rc;
            String fn = flags == 0 ? "nvmlInit_v2" : "nvmlInitWithFlags";
            try {
                rc = flags == 0 ? api.nvmlInit_v2() : api.nvmlInitWithFlags(flags);
            } catch (UnsatisfiedLinkError e) {
                throw new NvmlLibraryException(fn, NvmlReturn.FUNCTION_NOT_FOUND, name, "symbol missing", e);
            }
            if (rc != 0) {
                throw new NvmlException(fn, rc, null);
            }
            activeFlags = flags;
            LOG.debug("NVML initialized from {} (flags {})", name, flags);
        } else if (flags != activeFlags) {
            throw new io.qgpu.api.InvalidValueException("nvml.initFlags", flags,
                    "NVML from " + name + " is already initialized with flags " + activeFlags
                            + " by another open session; close those sessions first or use the same flags");
        }
        refs++;
    }

    /** Drops a reference; the last one shuts NVML down. A failing shutdown is logged, not thrown. */
    public synchronized void release() {
        if (refs <= 0) {
            throw new IllegalStateException("NVML reference count of " + name + " is already 0");
        }
        refs--;
        if (refs == 0) {
            int rc;
            try {
                rc = api.nvmlShutdown();
            } catch (UnsatisfiedLinkError e) {
                LOG.warn("nvmlShutdown missing in {}", name, e);
                return;
            }
            if (rc != 0) {
                LOG.warn("nvmlShutdown of {} returned {} ({})", name, rc, NvmlReturn.of(rc).cName());
            } else {
                LOG.debug("NVML shut down ({})", name);
            }
        }
    }

    /** The current reference count (for tests and diagnostics). */
    public synchronized int references() {
        return refs;
    }
}
