@org.jspecify.annotations.NullMarked
package io.qgpu.nvml.discovery;
