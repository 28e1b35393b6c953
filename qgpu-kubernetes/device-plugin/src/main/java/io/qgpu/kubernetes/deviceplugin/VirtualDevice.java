package io.qgpu.kubernetes.deviceplugin;

import io.qgpu.api.Health;
import io.qgpu.api.Validate;
import java.util.OptionalInt;

/**
 * One virtual device id as the kubelet sees it in {@code ListAndWatch}: {@code <GPU UUID>::<slot>}.
 * Each has a home GPU, the one its id names; while an allocation holds it, it is on the GPU the
 * allocation chose (usually its home), and it shows that GPU's health and NUMA node.
 *
 * @param id     the id, at most {@value #MAX_ID_LENGTH} characters (the kubelet's limit)
 * @param gpu    UUID of the physical GPU it is on now
 * @param health that GPU's health
 * @param numa   that GPU's NUMA node; empty when discovery does not know it
 *
 * <p>Thread safety: immutable.
 */
public record VirtualDevice(String id, String gpu, Health health, OptionalInt numa) {

    /** The kubelet refuses longer device ids. */
    public static final int MAX_ID_LENGTH = 63;

    /** Separates the home GPU's UUID from the slot number in an id. */
    public static final String SEPARATOR = "::";

    public VirtualDevice {
        Validate.notBlank("virtualDevice.id", id);
        Validate.notBlank("virtualDevice[" + id + "].gpu", gpu);
        Validate.notNull("virtualDevice[" + id + "].health", health);
        Validate.notNull("virtualDevice[" + id + "].numa", numa);
    }

    /** The id of slot {@code slot} of GPU {@code gpuUuid}; refuses one longer than the kubelet takes. */
    public static String idOf(String gpuUuid, int slot) {
        String id = gpuUuid + SEPARATOR + slot;
        if (id.length() > MAX_ID_LENGTH) {
            throw new IllegalArgumentException("virtual device id " + id + " is " + id.length()
                    + " characters long; the kubelet takes at most " + MAX_ID_LENGTH);
        }
        return id;
    }

    /** The home GPU named by an id of this plugin. */
    public static String homeOf(String id) {
        int i = id.lastIndexOf(SEPARATOR);
        return i <= 0 ? id : id.substring(0, i);
    }
}
