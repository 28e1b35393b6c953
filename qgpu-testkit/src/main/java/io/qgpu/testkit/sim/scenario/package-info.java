/**
 * Simulation scenarios as JSON files, for {@code qgpu simulate} and for library code that keeps its
 * scenarios in files: {@link io.qgpu.testkit.sim.scenario.ScenarioFile} reads one into the simulator's
 * scenario, ready for {@link io.qgpu.testkit.sim.Simulator}.
 *
 * <pre>{@code
 * var scenario = ScenarioFile.read(Path.of("samples/qgpu-cli/scenarios/online-offline-burst-share.json"));
 * SimResult r = Simulator.standard().run(scenario);
 * }</pre>
 *
 * <p><b>Guarantees.</b> Reading is strict, like every qgpu reader: an unknown key, a fraction where a
 * whole number is meant, a bare number where a duration is meant, a missing required key or a value out
 * of range is refused with a {@link io.qgpu.json.QgpuJsonException} naming the file, the JSON path
 * as written, the value and the line. {@code ScenarioFile} is stateless and safe from any thread.
 *
 * <p>docs/formats.md in the repository, section "Scenario" (key by key, with units and defaults); the
 * JSON Schema is schemas/scenario.schema.json.
 */
@NullMarked
package io.qgpu.testkit.sim.scenario;

import org.jspecify.annotations.NullMarked;
