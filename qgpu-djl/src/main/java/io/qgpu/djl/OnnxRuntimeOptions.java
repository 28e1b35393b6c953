package io.qgpu.djl;

import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import ai.onnxruntime.providers.OrtCUDAProviderOptions;
import io.qgpu.api.Validate;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalLong;

/**
 * ONNX Runtime's knobs for a qgpu tenant: the CUDA execution provider with {@code gpu_mem_limit} set from
 * {@code QGPU_MEMORY_LIMIT_BYTES}, as model-load options for DJL's ONNX Runtime engine. Needs
 * {@code com.microsoft.onnxruntime:onnxruntime_gpu} at run time for CUDA (the CPU package has no CUDA provider).
 *
 * <pre>{@code
 * Map<String, Object> options = OnnxRuntimeOptions.cuda(env, 0);   // device 0 of NVIDIA_VISIBLE_DEVICES
 * OnnxRuntimeOptions.cudaProviderSettings(env, 0);    // {device_id=0, gpu_mem_limit=8589934592}
 * Criteria.builder()...optDevice(Device.cpu()).optOptions(options)...   // see below for why Device.cpu()
 * }</pre>
 *
 * <p>DJL's ONNX Runtime engine adds a CUDA provider of its own, without a memory limit, when the model is
 * loaded on a GPU device; load it on {@link ai.djl.Device#cpu()} with these options instead: ONNX Runtime then
 * runs the graph on the GPU through the provider given here, and DJL's arrays (inputs and outputs) stay in host
 * memory, copied by ONNX Runtime.
 *
 * <p>{@code gpu_mem_limit} bounds ONNX Runtime's CUDA memory arena (the buffers it allocates for the graph's
 * tensors); memory that CUDA, cuDNN or cuBLAS allocate outside the arena (their contexts and workspaces) is not
 * counted, so the process may use somewhat more than the limit.
 *
 * <p>Thread safety: stateless.
 */
public final class OnnxRuntimeOptions {

    /** The key of DJL's ONNX Runtime engine for a whole {@link OrtSession.SessionOptions} object. */
    public static final String SESSION_OPTIONS = "sessionOptions";
    /** The CUDA provider's option that bounds its memory arena, in bytes. */
    public static final String GPU_MEM_LIMIT = "gpu_mem_limit";
    /** The CUDA provider's option that picks the device. */
    public static final String DEVICE_ID = "device_id";

    private OnnxRuntimeOptions() {
    }

    /**
     * The CUDA provider's settings for visible GPU {@code deviceIndex}, by ONNX Runtime's names: its
     * {@code device_id} and, if the environment sets a memory limit for it, {@code gpu_mem_limit}.
     *
     * @throws io.qgpu.api.InvalidValueException if the index is negative or not one of the visible GPUs
     */
    public static Map<String, String> cudaProviderSettings(QgpuEnvironment env, int deviceIndex) {
        Validate.notNull("env", env);
        Validate.atLeast("deviceIndex", deviceIndex, 0);
        env.gpu(deviceIndex);   // refuses an index outside the visible GPUs
        Map<String, String> m = new LinkedHashMap<>();
        m.put(DEVICE_ID, Integer.toString(deviceIndex));
        OptionalLong limit = env.memoryLimitBytes(deviceIndex);
        if (limit.isPresent()) {
            m.put(GPU_MEM_LIMIT, Long.toString(limit.getAsLong()));
        }
        return Collections.unmodifiableMap(m);
    }

    /**
     * {@link #cudaProviderSettings} as ONNX Runtime's provider options object. Needs the GPU package: the CPU
     * package has no CUDA provider to create them with.
     *
     * @throws OrtException if ONNX Runtime has no CUDA provider or refuses a setting
     */
    public static OrtCUDAProviderOptions cudaProviderOptions(QgpuEnvironment env, int deviceIndex) throws OrtException {
        Map<String, String> settings = cudaProviderSettings(env, deviceIndex);
        OrtCUDAProviderOptions cuda = new OrtCUDAProviderOptions(deviceIndex);
        try {
            for (Map.Entry<String, String> e : settings.entrySet()) {
                if (!e.getKey().equals(DEVICE_ID)) {
                    cuda.add(e.getKey(), e.getValue());
                }
            }
        } catch (OrtException | RuntimeException e) {
            cuda.close();
            throw e;
        }
        return cuda;
    }

    /**
     * Model-load options for DJL's ONNX Runtime engine ({@code Criteria.optOptions} or {@code Model.load}):
     * session options with the CUDA provider of {@link #cudaProviderOptions}. Load the model on the CPU device
     * (see the class comment). Untested without a GPU.
     *
     * @throws OrtException if this ONNX Runtime has no CUDA provider (the CPU package)
     */
    public static Map<String, Object> cuda(QgpuEnvironment env, int deviceIndex) throws OrtException {
        OrtSession.SessionOptions session = new OrtSession.SessionOptions();
        try (OrtCUDAProviderOptions cuda = cudaProviderOptions(env, deviceIndex)) {
            session.addCUDA(cuda);
        } catch (OrtException | RuntimeException e) {
            session.close();
            throw e;
        }
        return Map.of(SESSION_OPTIONS, session);
    }
}
