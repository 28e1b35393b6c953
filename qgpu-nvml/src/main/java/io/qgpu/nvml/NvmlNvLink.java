package io.qgpu.nvml;

import java.util.Optional;

/**
 * One NVLink of a GPU.
 *
 * <pre>{@code
 * long up = gpu.nvLinks().stream().filter(NvmlNvLink::active).count();
 * }</pre>
 *
 * @param link   the link number, from 0
 * @param active whether the link is up
 * @param remote the PCI device at the other end (a GPU, or an NVSwitch), known for active links
 *
 * <p>Thread safety: immutable.
 */
public record NvmlNvLink(int link, boolean active, Optional<NvmlPciInfo> remote) {
}
