@NullMarked
package io.qgpu.core.gate;

import org.jspecify.annotations.NullMarked;
