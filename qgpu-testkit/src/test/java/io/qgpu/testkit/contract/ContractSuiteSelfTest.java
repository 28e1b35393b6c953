package io.qgpu.testkit.contract;

import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.ACCEPTS_OFF_GRID;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.ALLOWS_DUPLICATE_TENANT;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.ALTERS_CLAIM;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.CHARGES_REFUSED_CLAIMS;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.IGNORES_AFFINITY;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.IGNORES_ANTI_AFFINITY;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.IGNORES_COMPUTE;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.IGNORES_EXCLUSION;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.IGNORES_EXCLUSIVITY;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.IGNORES_HOST_RESOURCES;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.IGNORES_MAX_TENANTS;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.IGNORES_MEMORY;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.IGNORES_MODEL_SELECTORS;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.IGNORES_NODE_LABELS;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.IGNORES_RESERVED_CLASS;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.IGNORES_TOPOLOGY;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.IGNORES_UUID_SELECTORS;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.LEAKS_MEMORY_ON_RELEASE;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.LEAKS_PARTIAL_MULTI_GPU;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.NON_DETERMINISTIC;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.POOLS_COMPUTE_ACROSS_CLASSES;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.REFUSES_EVERYTHING;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.REFUSES_LARGE_CLAIMS;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.RELEASE_THROWS_ON_UNKNOWN;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.SPANS_NODES;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.USES_DEFAULT_RULES;
import static io.qgpu.testkit.contract.ConfigurableScheduler.Flaw.USES_UNHEALTHY_GPUS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.testkit.property.Seeds;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.discovery.DiscoverySelectors;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;
import org.junit.platform.testkit.engine.EventType;
import org.junit.platform.testkit.engine.Events;

/**
 * Negative self-tests of the contract suite, in the manner of the reactive-streams TCK's
 * {@code PublisherVerificationTest}: every rule of {@link SchedulerContractSuite} is run through the
 * JUnit Platform test kit against a {@link ConfigurableScheduler} with one deliberate flaw, and must
 * fail with an {@link AssertionError} that says what broke. {@link FlawlessSchedulerContractTest} is
 * the positive control (no flaw: every rule passes), and the capability tests show that rules a
 * scheduler opts out of are skipped with a reason while the rest still run.
 */
class ContractSuiteSelfTest {

    /** A rule, the flaw it must catch, and text its failure must contain. */
    record Case(String rule, ConfigurableScheduler.Flaw flaw, List<String> expected) {
        @Override
        public String toString() {
            return rule + " rejects " + flaw;
        }
    }

    private static final String RERUN = "Re-run with this seed: -Dqgpu.seed=";
    private static final String REFUSED = "to be placed, but it was refused";

    static List<Case> cases() {
        return List.of(
                c("rule_1_01_placesClaimsThatFit", REFUSES_EVERYTHING, REFUSED),
                c("rule_1_02_answersAboutTheClaimAskedFor", ALTERS_CLAIM, "[PROTOCOL]", "instead of the claim asked for"),
                c("rule_1_03_neverOversubscribesMemory", IGNORES_MEMORY, "[MEMORY]", "18 GiB reserved of 16 GiB"),
                c("rule_1_04_neverOversubscribesGuaranteedCompute", IGNORES_COMPUTE, "[COMPUTE]", "offline guaranteed compute 110%"),
                c("rule_1_05_respectsMaxTenantsPerGpu", IGNORES_MAX_TENANTS, "[TENANTS]", "5 tenants, at most 4"),
                c("rule_1_06_followsTheGivenGranularityRules", USES_DEFAULT_RULES, REFUSED),
                c("rule_1_07_exclusiveClaimsTakeWholeEmptyGpus", IGNORES_EXCLUSIVITY, "[EXCLUSIVE]"),
                c("rule_1_08_refusesSizesOffTheGrid", ACCEPTS_OFF_GRID, "to be refused (1.5 GiB is not a whole GiB)"),
                c("rule_1_09_neverPlacesOnUnhealthyGpus", USES_UNHEALTHY_GPUS, "[UNHEALTHY]"),
                c("rule_1_10_releaseRestoresCapacity", LEAKS_MEMORY_ON_RELEASE, REFUSED, "t4: 1 GPU exclusive"),
                c("rule_1_11_releaseIsIdempotent", RELEASE_THROWS_ON_UNKNOWN, "release(nobody) threw"),
                c("rule_1_12_refusesADuplicateTenant", ALLOWS_DUPLICATE_TENANT, "to be refused (t1 is placed already)"),
                c("rule_1_13_refusalLeavesNoTrace", CHARGES_REFUSED_CLAIMS, REFUSED),
                c("rule_1_14_releaseRestoresCapacityForRandomSequences", LEAKS_MEMORY_ON_RELEASE,
                        "[CAPACITY_RESTORED]", "Shrunk case", RERUN),
                c("rule_1_15_randomSequencesKeepEveryInvariant", IGNORES_MEMORY, "[MEMORY]", "Shrunk case", RERUN),
                c("rule_1_16_sameInputGivesSamePlacements", NON_DETERMINISTIC, "[DETERMINISM]", "Shrunk case", RERUN),
                c("rule_1_17_placesAClaimThatFitsAnEmptyCluster", REFUSES_LARGE_CLAIMS, "[COMPLETENESS]",
                        "fits the empty cluster but was refused", RERUN),
                c("rule_1_18_keepsAMigInstanceForOneTenant", IGNORES_MAX_TENANTS, "[TENANTS]", "MIG instance shared by 2 tenants"),
                c("rule_1_19_neverOversubscribesHostResources", IGNORES_HOST_RESOURCES, "[HOST]",
                        "CPU 4500 millicores reserved of 4000"),
                c("rule_2_01_multiGpuClaimsUseGpusOfOneNode", SPANS_NODES, "[TARGETS]", "not on the placement's node"),
                c("rule_2_02_multiGpuClaimsAreAllOrNothing", LEAKS_PARTIAL_MULTI_GPU, REFUSED, "two: 2 GPU exclusive"),
                c("rule_2_03_exclusiveMultiGpuClaimsTakeWholeGpus", IGNORES_EXCLUSIVITY, "[EXCLUSIVE]"),
                c("rule_3_01_honoursModelSelectors", IGNORES_MODEL_SELECTORS, "[SELECTORS]", "model Tesla T4"),
                c("rule_3_02_honoursUuidSelectors", IGNORES_UUID_SELECTORS, "[SELECTORS]", "is not selected"),
                c("rule_3_03_honoursNodeLabels", IGNORES_NODE_LABELS, "[SELECTORS]", "node selector pool=b"),
                c("rule_4_01_guaranteedComputeIsAdmittedPerClass", POOLS_COMPUTE_ACROSS_CLASSES, REFUSED),
                c("rule_4_02_honoursGpusKeptForAClass", IGNORES_RESERVED_CLASS, "[RESERVED_CLASS]"),
                c("rule_5_01_affinityCoLocates", IGNORES_AFFINITY, "[AFFINITY]"),
                c("rule_5_02_antiAffinitySeparates", IGNORES_ANTI_AFFINITY, "[ANTI_AFFINITY]"),
                c("rule_5_03_exclusionDedicatesGpus", IGNORES_EXCLUSION, "[EXCLUSION]"),
                c("rule_6_01_pairsTheBestLinkedGpus", IGNORES_TOPOLOGY, "weakest link is NV1",
                        "a set with a stronger weakest link exists"),
                c("rule_6_02_keepsFourGpusInsideAnNvLinkQuad", IGNORES_TOPOLOGY, "are linked by SYS",
                        "a 4-GPU claim fits inside an NVLink quad"));
    }

    private static Case c(String rule, ConfigurableScheduler.Flaw flaw, String... expected) {
        return new Case(rule, flaw, List.of(expected));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void eachRuleFailsOnASchedulerWithItsFlaw(Case c) {
        Events events = run(c.rule(), c.flaw().name(), null);
        events.assertStatistics(s -> s.started(1).failed(1).succeeded(0));
        Throwable failure = failureOf(events);
        assertInstanceOf(AssertionError.class, failure, () -> "a rule fails with an AssertionError, not " + failure);
        for (String fragment : c.expected()) {
            assertTrue(failure.getMessage().contains(fragment), () -> c.rule() + " with " + c.flaw()
                    + " should fail with a message containing \"" + fragment + "\", but said:\n" + failure.getMessage());
        }
    }

    @Test
    void everyRuleOfTheSuiteHasANegativeSelfTest() {
        Set<String> rules = new TreeSet<>();
        for (Method m : SchedulerContractSuite.class.getDeclaredMethods()) {
            if (m.isAnnotationPresent(Test.class)) {
                assertTrue(m.getName().matches("rule_\\d_\\d\\d_\\w+"), "rule method names are numbered: " + m.getName());
                rules.add(m.getName());
            }
        }
        Set<String> covered = cases().stream().map(Case::rule).collect(Collectors.toCollection(TreeSet::new));
        assertEquals(rules, covered, "every rule of the suite needs a flaw that makes it fail, and nothing else");
        assertEquals(32, rules.size());
    }

    @Test
    void rulesOfUndeclaredCapabilitiesAreSkippedWithTheReason() {
        Events events = runAll("none", "");
        events.assertStatistics(s -> s.started(32).succeeded(21).aborted(11).failed(0));
        List<String> aborted = names(events, EventType.FINISHED, TestExecutionResult.Status.ABORTED);
        assertEquals(List.of("rule_1_19", "rule_2_01", "rule_2_02", "rule_2_03", "rule_4_01", "rule_4_02", "rule_5_01",
                "rule_5_02", "rule_5_03", "rule_6_01", "rule_6_02"), aborted.stream().map(n -> n.substring(0, 9)).sorted().toList());
        Throwable why = events.aborted().stream().findFirst().orElseThrow().getPayload(TestExecutionResult.class)
                .orElseThrow().getThrowable().orElseThrow();
        assertTrue(why.getMessage().contains("does not declare capability"), why.getMessage());
    }

    @Test
    void anHonestSchedulerThatOptsOutOfWhatItLacksPassesTheRest() {
        // the same kind of scheduler a toy first-fit is: no priority classes, labels or topology
        String lacks = Stream.of(POOLS_COMPUTE_ACROSS_CLASSES, IGNORES_RESERVED_CLASS, IGNORES_AFFINITY,
                IGNORES_ANTI_AFFINITY, IGNORES_EXCLUSION, IGNORES_TOPOLOGY).map(Enum::name).collect(Collectors.joining(","));
        Events events = runAll(lacks, "MULTI_GPU");
        events.assertStatistics(s -> s.started(32).succeeded(24).aborted(8).failed(0));
        // and claiming the capabilities it lacks makes the suite fail it
        Events claimed = runAll(lacks, "MULTI_GPU,PRIORITY_CLASSES,LOCALITY_LABELS,TOPOLOGY");
        List<String> failed = names(claimed, EventType.FINISHED, TestExecutionResult.Status.FAILED);
        assertTrue(failed.containsAll(List.of("rule_4_01_guaranteedComputeIsAdmittedPerClass()",
                "rule_4_02_honoursGpusKeptForAClass()", "rule_5_01_affinityCoLocates()", "rule_5_02_antiAffinitySeparates()",
                "rule_5_03_exclusionDedicatesGpus()", "rule_6_01_pairsTheBestLinkedGpus()")), failed::toString);
    }

    @Test
    void theSeededPropertiesGenerateHostPressureThatCatchesAnOversubscribingScheduler() {
        // with HOST_RESOURCES declared, the random sequences of rule 1.15 carry host capacities and requests
        Throwable failure = failureOf(run("rule_1_15_randomSequencesKeepEveryInvariant", IGNORES_HOST_RESOURCES.name(), null));
        assertTrue(failure.getMessage().contains("[HOST]"), failure.getMessage());
        assertTrue(failure.getMessage().contains("Shrunk case"), failure.getMessage());
    }

    @Test
    void aPropertyRuleFailureReplaysExactlyWithItsSeed() {
        String rule = "rule_1_15_randomSequencesKeepEveryInvariant";
        String previous = System.getProperty(Seeds.PROPERTY);
        try {
            System.clearProperty(Seeds.PROPERTY);
            String first = failureOf(run(rule, IGNORES_MEMORY.name(), null)).getMessage();
            Matcher m = Pattern.compile("\\(seed (-?\\d+), random\\)").matcher(first);
            assertTrue(m.find(), first);
            System.setProperty(Seeds.PROPERTY, m.group(1));
            String replay = failureOf(run(rule, IGNORES_MEMORY.name(), null)).getMessage();
            assertTrue(replay.contains("(seed " + m.group(1) + ", from -Dqgpu.seed)"), replay);
            assertEquals(shrunkCase(first), shrunkCase(replay), "the same seed must give the same shrunk case");
        } finally {
            if (previous == null) {
                System.clearProperty(Seeds.PROPERTY);
            } else {
                System.setProperty(Seeds.PROPERTY, previous);
            }
        }
    }

    // ------------------------------------------------------------------ helpers

    private static Events run(String rule, String flaws, String capabilities) {
        var request = EngineTestKit.engine("junit-jupiter")
                .configurationParameter(BrokenSchedulerVerification.FLAWS, flaws)
                .selectors(DiscoverySelectors.selectMethod(BrokenSchedulerVerification.class, rule));
        if (capabilities != null) {
            request.configurationParameter(BrokenSchedulerVerification.CAPABILITIES, capabilities);
        }
        return request.execute().testEvents();
    }

    private static Events runAll(String flaws, String capabilities) {
        return EngineTestKit.engine("junit-jupiter")
                .configurationParameter(BrokenSchedulerVerification.FLAWS, flaws)
                .configurationParameter(BrokenSchedulerVerification.CAPABILITIES, capabilities)
                .selectors(DiscoverySelectors.selectClass(BrokenSchedulerVerification.class))
                .execute().testEvents();
    }

    private static Throwable failureOf(Events events) {
        return events.failed().stream().findFirst()
                .orElseThrow(() -> new AssertionError("the rule did not fail: " + summary(events)))
                .getPayload(TestExecutionResult.class).orElseThrow().getThrowable().orElseThrow();
    }

    private static List<String> names(Events events, EventType type, TestExecutionResult.Status status) {
        List<String> out = new ArrayList<>();
        for (Event e : events.list()) {
            if (e.getType() == type && e.getPayload(TestExecutionResult.class).map(r -> r.getStatus() == status).orElse(false)) {
                out.add(e.getTestDescriptor().getDisplayName().startsWith("rule ")
                        ? methodName(e) : e.getTestDescriptor().getDisplayName());
            }
        }
        return out;
    }

    private static String methodName(Event e) {
        String id = e.getTestDescriptor().getUniqueId().toString();
        Matcher m = Pattern.compile("\\[method:([^\\]]+)\\]").matcher(id);
        return m.find() ? m.group(1) : id;
    }

    private static String summary(Events events) {
        return Arrays.toString(events.list().stream().map(e -> e.getType() + " " + e.getTestDescriptor().getDisplayName()
                + e.getPayload(TestExecutionResult.class).map(r -> " " + r).orElse("")).toArray());
    }

    private static String shrunkCase(String message) {
        int from = message.indexOf("Shrunk case");
        int to = message.indexOf("Failure of the shrunk case");
        assertTrue(from >= 0 && to > from, message);
        return message.substring(from, to);
    }
}
