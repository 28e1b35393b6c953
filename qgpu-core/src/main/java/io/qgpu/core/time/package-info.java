/**
 * The one duration syntax of qgpu's files, command lines and messages ({@link io.qgpu.core.time.Durations}):
 * a number and a unit ({@code 250ms}, {@code 1.5s}, {@code 40us}, {@code 2m}), never a bare number and never
 * ISO-8601 ({@code PT0.1S}). The engines' configuration errors show durations this way; the JSON formats
 * (qgpu-json), the CLI, the scheduler extender, the node agents and the testkit's scenario files read them
 * this way.
 *
 * <p>Thread safety: {@code Durations} is stateless; safe from any thread.
 */
@NullMarked
package io.qgpu.core.time;

import org.jspecify.annotations.NullMarked;
