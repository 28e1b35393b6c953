package io.qgpu.testkit.sim.scenario;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;

/**
 * The scenario format as Jackson binds it: one record per JSON object, the keys exactly as written
 * in the file. {@link ScenarioFile} turns them into the simulator's model. A duration is a string
 * ({@link Durations}); a distribution is a duration or one of {@link DistJson}, so it is kept as a
 * {@link JsonNode} here and bound when converted.
 */
final class ScenarioJson {
    private ScenarioJson() {
    }

    record ScenarioDto(String name, String description, String duration, Long seed, String bucket, ComputeDto compute,
                       PreemptionDto preemption, List<GpuDto> gpus, GpuDto gpu) {
    }

    record ComputeDto(String window, String baseQuota, String minQuota, Double burstWeight, String limitEnforcement) {
    }

    /**
     * {@code release} is a duration (a fixed delay) or an {@link AdaptiveReleaseDto}, so it is kept as a
     * {@link JsonNode} and bound when converted; {@code kernels} is {@code atomic} or {@code interruptible};
     * {@code switch} is the cost of one switch between offline and online work; {@code offlineFloor}
     * turns the offline floor off ({@code false}) or on (the default).
     */
    record PreemptionDto(String bound, String releaseDelay, JsonNode release, String kernels,
                         @com.fasterxml.jackson.annotation.JsonProperty("switch") String switchTime, Boolean offlineFloor) {
    }

    /** {@code {"type": "adaptive", "switchCost": "400us", "maxHold": "200ms"}}. */
    record AdaptiveReleaseDto(String type, String switchCost, String maxHold) {
    }

    record GpuDto(String id, String policy, String slicing, List<TenantDto> tenants) {
    }

    record TenantDto(String id, String priority, Integer request, Integer limit, WorkloadDto workload, JsonNode suspendLatency,
                     String from, String until) {
    }

    /** A workload, by {@code type}. */
    @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "type")
    @JsonSubTypes({
            @JsonSubTypes.Type(value = ClosedLoopDto.class, name = "closed-loop"),
            @JsonSubTypes.Type(value = OpenLoopDto.class, name = "open-loop"),
            @JsonSubTypes.Type(value = TrainingDto.class, name = "training")})
    sealed interface WorkloadDto permits ClosedLoopDto, OpenLoopDto, TrainingDto {
    }

    record ClosedLoopDto(JsonNode kernel, JsonNode think) implements WorkloadDto {
    }

    record OpenLoopDto(Double rate, JsonNode service) implements WorkloadDto {
    }

    record TrainingDto(JsonNode compute, JsonNode dataLoad, Integer kernels) implements WorkloadDto {
    }

    /** A distribution written as an object, by {@code type}. */
    @JsonTypeInfo(use = JsonTypeInfo.Id.NAME, property = "type")
    @JsonSubTypes({
            @JsonSubTypes.Type(value = ConstantDto.class, name = "constant"),
            @JsonSubTypes.Type(value = UniformDto.class, name = "uniform"),
            @JsonSubTypes.Type(value = ExponentialDto.class, name = "exponential"),
            @JsonSubTypes.Type(value = LogNormalDto.class, name = "lognormal")})
    sealed interface DistJson permits ConstantDto, UniformDto, ExponentialDto, LogNormalDto {
    }

    record ConstantDto(String value) implements DistJson {
    }

    record UniformDto(String min, String max) implements DistJson {
    }

    record ExponentialDto(String mean) implements DistJson {
    }

    record LogNormalDto(String median, Double sigma) implements DistJson {
    }
}
