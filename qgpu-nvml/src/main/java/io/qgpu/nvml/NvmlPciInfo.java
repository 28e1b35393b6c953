package io.qgpu.nvml;

/**
 * A PCI function as {@code nvmlPciInfo_t} describes it.
 *
 * <pre>{@code
 * NvmlPciInfo pci = gpu.pciInfo();
 * pci.busId();   // "00000000:18:00.0"
 * }</pre>
 *
 * @param busId          domain:bus:device.function, for example {@code 00000000:18:00.0}
 * @param busIdLegacy    the same with a 4-digit domain, for example {@code 0000:18:00.0}
 * @param domain         PCI domain
 * @param bus            PCI bus
 * @param device         PCI device
 * @param pciDeviceId    combined device and vendor id (vendor in the low 16 bits)
 * @param pciSubSystemId combined subsystem device and vendor id
 *
 * <p>Thread safety: immutable.
 */
public record NvmlPciInfo(String busId, String busIdLegacy, long domain, long bus, long device, long pciDeviceId,
                          long pciSubSystemId) {

    /** Whether both describe the same PCI device (domain, bus and device numbers). */
    public boolean sameDevice(NvmlPciInfo other) {
        return other != null && domain == other.domain && bus == other.bus && device == other.device;
    }
}
