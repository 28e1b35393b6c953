package io.qgpu.api;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** Reasons read by people carry units: GiB for memory, percent for compute, counts with their noun. */
class ReasonMessageTest {

    @Test
    void memoryIsInGibWithTheShortfall() {
        assertEquals("GPU-a: INSUFFICIENT_MEMORY requested 100 GiB, free 80 GiB (short by 20 GiB)",
                Reason.shortOf(ReasonCode.INSUFFICIENT_MEMORY, "GPU-a", 100 * GpuDevice.GIB, 80 * GpuDevice.GIB).message());
        assertEquals("GPU-a: INSUFFICIENT_MEMORY requested 1.40 GiB, free 0 GiB (short by 1.40 GiB)",
                Reason.shortOf(ReasonCode.INSUFFICIENT_MEMORY, "GPU-a", 1_503_238_554L, 0).message());
    }

    @Test
    void computeIsInPercentAndCountsHaveTheirNoun() {
        assertEquals("GPU-a: INSUFFICIENT_COMPUTE requested 30%, free 20% (short by 10%) online guaranteed compute",
                new Reason(ReasonCode.INSUFFICIENT_COMPUTE, "GPU-a", 30, 20, "online guaranteed compute").message());
        assertEquals("n: NOT_ENOUGH_GPUS requested 4 GPUs, available 1 GPU (short by 3 GPUs)",
                Reason.shortOf(ReasonCode.NOT_ENOUGH_GPUS, "n", 4, 1).message());
        assertEquals("GPU-a: TOO_MANY_TENANTS requested 1 tenant slot, free 0 tenant slots (short by 1 tenant slot) at most 4 tenants",
                new Reason(ReasonCode.TOO_MANY_TENANTS, "GPU-a", 1, 0, "at most 4 tenants").message());
    }

    @Test
    void anExclusiveClaimOnAGpuWithTenantsSaysSo() {
        assertEquals("GPU-a: EXCLUSIVE an exclusive claim needs a GPU without tenants; this one has 1 tenant",
                Reason.shortOf(ReasonCode.EXCLUSIVE, "GPU-a", 0, 1).message());
        assertEquals("GPU-a: EXCLUSIVE an exclusive claim needs a GPU without tenants; this one has 3 tenants",
                Reason.shortOf(ReasonCode.EXCLUSIVE, "GPU-a", 0, 3).message());
        assertEquals("GPU-a: EXCLUSIVE requested 40 GiB, device has 80 GiB an exclusive slice holds the whole device memory",
                new Reason(ReasonCode.EXCLUSIVE, "GPU-a", 40 * GpuDevice.GIB, 80 * GpuDevice.GIB,
                        "an exclusive slice holds the whole device memory").message());
    }

    @Test
    void reasonsWithoutQuantitiesAreUnchanged() {
        assertEquals("GPU-a: UNHEALTHY GPU is unhealthy", Reason.of(ReasonCode.UNHEALTHY, "GPU-a", "GPU is unhealthy").message());
    }
}
