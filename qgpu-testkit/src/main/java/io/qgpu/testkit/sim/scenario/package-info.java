@org.jspecify.annotations.NullMarked
package io.qgpu.testkit.sim.scenario;
