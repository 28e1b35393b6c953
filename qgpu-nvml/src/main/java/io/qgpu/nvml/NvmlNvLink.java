package io.qgpu.nvml;

import io.qgpu.api.Validate;
import java.util.Optional;

/**
 * One NVLink of a GPU.
 *
 * <pre>{@code
 * long toSwitches = gpu.nvLinks().stream().filter(l -> l.remoteType() == NvmlNvLinkRemoteType.SWITCH).count();
 * }</pre>
 *
 * @param link       the link number, from 0
 * @param active     whether the link is up
 * @param remote     the PCI device at the other end (a GPU, or an NVSwitch); empty for links that are down
 *                   and for active links whose remote side NVML cannot identify (as in some VMs)
 * @param remoteType what the other end is; {@link NvmlNvLinkRemoteType#UNKNOWN} for links that are down
 *                   and when NVML cannot tell
 *
 * <p>Thread safety: immutable.
 */
public record NvmlNvLink(int link, boolean active, Optional<NvmlPciInfo> remote, NvmlNvLinkRemoteType remoteType) {

    public NvmlNvLink {
        Validate.atLeast("nvLink.link", link, 0);
        Validate.notNull("nvLink[" + link + "].remote", remote);
        Validate.notNull("nvLink[" + link + "].remoteType", remoteType);
    }
}
