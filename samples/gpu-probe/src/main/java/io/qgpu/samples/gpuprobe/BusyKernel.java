package io.qgpu.samples.gpuprobe;

import java.util.List;
import java.util.Locale;

/**
 * The probe's busy kernel as PTX text, loaded with {@code cuModuleLoadData} (the driver compiles it for
 * the device it runs on). Each thread runs a chain of dependent single-precision FMAs and stores the
 * result, so the compiler can neither drop nor shorten the loop:
 *
 * <pre>{@code
 * busy(float* out, unsigned int iterations):
 *     i = blockIdx.x * blockDim.x + threadIdx.x
 *     f = (float) i
 *     repeat iterations times: f = f * 0.99999988 + 1.0
 *     out[i] = f
 * }</pre>
 *
 * <p>The entry's parameters are {@link #PARAMS}, in that order; {@link Cuda#launch} passes exactly those.
 * The PTX targets {@code sm_75} (ISA 6.3) on devices of compute capability 7.5 and later,
 * {@code sm_70} (ISA 6.0) on Volta and {@code sm_52} (ISA 6.0) below: PTX for an older target runs on newer
 * devices, and the driver's JIT of a current driver takes ISA 6.x.
 *
 * <p>Thread safety: stateless.
 */
public final class BusyKernel {

    /** The entry point's name. */
    public static final String ENTRY = "busy";

    /** One kernel parameter: its PTX name and state-space type. */
    public record Param(String name, String ptxType) {
    }

    /** The kernel's parameters: the output array (a device pointer) and the iteration count. */
    public static final List<Param> PARAMS = List.of(new Param("busy_out", ".u64"), new Param("busy_iterations", ".u32"));

    /**
     * The launch arguments for {@link #PARAMS}, in order and of the types {@link Cuda.Kernel#launch} maps to
     * them: the output array's device pointer ({@code .u64}, a {@link Long}) and the iteration count
     * ({@code .u32}, an {@link Integer}).
     */
    public static List<Object> arguments(long outPointer, int iterations) {
        return List.of(outPointer, iterations);
    }

    /** The FMA's multiplier, 0.99999988f ({@code 0x3F7FFFFE}), so the value stays finite for any count. */
    static final String MULTIPLIER = "0f3F7FFFFE";

    private BusyKernel() {
    }

    /** The PTX {@code .target} for a device of this compute capability (major * 10 + minor). */
    public static String target(int computeCapability) {
        if (computeCapability >= 75) {
            return "sm_75";
        }
        return computeCapability >= 70 ? "sm_70" : "sm_52";
    }

    /** The PTX ISA {@code .version} that goes with {@link #target(int)}. */
    public static String isaVersion(int computeCapability) {
        return computeCapability >= 75 ? "6.3" : "6.0";
    }

    /**
     * The module's PTX text for a device of this compute capability (major * 10 + minor, e.g. 90 for
     * an H100).
     */
    public static String ptx(int computeCapability) {
        if (computeCapability < 50 || computeCapability > 200) {
            throw new IllegalArgumentException("compute capability " + computeCapability + " is outside 50..200 (5.0 to 20.0)");
        }
        StringBuilder params = new StringBuilder();
        for (int i = 0; i < PARAMS.size(); i++) {
            Param p = PARAMS.get(i);
            params.append("    .param ").append(p.ptxType()).append(' ').append(p.name())
                    .append(i + 1 < PARAMS.size() ? ",\n" : "\n");
        }
        return String.format(Locale.ROOT, String.join("\n",
                "//",
                "// qgpu gpu-probe busy kernel: dependent FMA chain per thread",
                "//",
                ".version %s",
                ".target %s",
                ".address_size 64",
                "",
                ".visible .entry %s(",
                "%s)",
                "{",
                "    .reg .pred %%p<2>;",
                "    .reg .b32 %%r<8>;",
                "    .reg .f32 %%f<2>;",
                "    .reg .b64 %%rd<5>;",
                "",
                "    ld.param.u64 %%rd1, [%s];",
                "    ld.param.u32 %%r1, [%s];",
                "    mov.u32 %%r2, %%ctaid.x;",
                "    mov.u32 %%r3, %%ntid.x;",
                "    mov.u32 %%r4, %%tid.x;",
                "    mad.lo.u32 %%r5, %%r2, %%r3, %%r4;",
                "    cvt.rn.f32.u32 %%f1, %%r5;",
                "    mov.u32 %%r6, 0;",
                "BUSY_LOOP:",
                "    setp.ge.u32 %%p1, %%r6, %%r1;",
                "    @%%p1 bra BUSY_DONE;",
                "    fma.rn.f32 %%f1, %%f1, %s, 0f3F800000;",
                "    add.u32 %%r6, %%r6, 1;",
                "    bra.uni BUSY_LOOP;",
                "BUSY_DONE:",
                "    cvta.to.global.u64 %%rd2, %%rd1;",
                "    mul.wide.u32 %%rd3, %%r5, 4;",
                "    add.s64 %%rd4, %%rd2, %%rd3;",
                "    st.global.f32 [%%rd4], %%f1;",
                "    ret;",
                "}",
                ""),
                isaVersion(computeCapability), target(computeCapability), ENTRY, params,
                PARAMS.get(0).name(), PARAMS.get(1).name(), MULTIPLIER);
    }
}
