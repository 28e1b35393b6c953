package io.qgpu.testkit.property;

/**
 * A value once computed, for {@link Shrinkable#map}: a top-level type on purpose. Declared as a local
 * record inside the generic {@code map}, the annotated field of its type made the JDK 25 javadoc tool
 * crash when it read the compiled class ("Cannot add metadata to this type: FORALL"; the local type's
 * enclosing scope is the generic method).
 *
 * @param value f's result (may be any value the mapping gives, null included)
 */
record Computed<V>(V value) {
}
