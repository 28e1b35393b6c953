@org.jspecify.annotations.NullMarked
package io.qgpu.core.ledger;
