package io.qgpu.testkit.invariants;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import java.util.List;

/**
 * Makes a fresh, empty scheduler under test over these rules and nodes (GPU health as the nodes
 * say). Each call must return an independent instance.
 *
 * <pre>{@code
 * SchedulerFactory f = (rules, nodes) -> new MyAdapter(new MyScheduler(rules, nodes));
 * }</pre>
 *
 * <p>Thread safety: the checkers call a factory from one thread at a time.
 */
@FunctionalInterface
public interface SchedulerFactory {

    SchedulerUnderTest create(GranularityRules rules, List<Node> nodes);
}
