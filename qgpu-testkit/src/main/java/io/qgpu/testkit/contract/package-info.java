@org.jspecify.annotations.NullMarked
package io.qgpu.testkit.contract;
