package io.qgpu.testkit.contract;

import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.testkit.invariants.SchedulerUnderTest;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * The contract suite over a {@link ConfigurableScheduler} with the flaws and capabilities named by
 * the JUnit configuration parameters {@value #FLAWS} and {@value #CAPABILITIES} (comma-separated
 * enum names; capabilities default to all). It is run only by {@link ContractSuiteSelfTest} through
 * the JUnit Platform test kit; without the parameters it disables itself, and its name keeps
 * surefire from picking it up.
 */
@ExtendWith(BrokenSchedulerVerification.Setup.class)
class BrokenSchedulerVerification extends SchedulerContractSuite {

    static final String FLAWS = "qgpu.selftest.flaws";
    static final String CAPABILITIES = "qgpu.selftest.capabilities";

    /** What the self-test asked for. */
    record Config(Set<ConfigurableScheduler.Flaw> flaws, Set<Capability> capabilities) {
    }

    private final Config config;

    BrokenSchedulerVerification(Config config) {
        this.config = config;
    }

    @Override
    protected SchedulerUnderTest createScheduler(GranularityRules rules, List<Node> nodes) {
        return new ConfigurableScheduler(rules, nodes, config.flaws());
    }

    @Override
    protected Set<Capability> capabilities() {
        return config.capabilities();
    }

    /** Resolves the {@link Config} from the configuration parameters; disables the class without them. */
    static final class Setup implements ParameterResolver, ExecutionCondition {
        @Override
        public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
            return context.getConfigurationParameter(FLAWS).isPresent()
                    ? ConditionEvaluationResult.enabled("run by ContractSuiteSelfTest")
                    : ConditionEvaluationResult.disabled("only ContractSuiteSelfTest runs the broken schedulers");
        }

        @Override
        public boolean supportsParameter(ParameterContext p, ExtensionContext e) {
            return p.getParameter().getType() == Config.class;
        }

        @Override
        public Object resolveParameter(ParameterContext p, ExtensionContext e) {
            Set<ConfigurableScheduler.Flaw> flaws = EnumSet.noneOf(ConfigurableScheduler.Flaw.class);
            names(e.getConfigurationParameter(FLAWS)).forEach(n -> flaws.add(ConfigurableScheduler.Flaw.valueOf(n)));
            Optional<String> caps = e.getConfigurationParameter(CAPABILITIES);
            Set<Capability> capabilities = caps.isEmpty() ? EnumSet.allOf(Capability.class) : EnumSet.noneOf(Capability.class);
            names(caps).forEach(n -> capabilities.add(Capability.valueOf(n)));
            return new Config(flaws, capabilities);
        }

        private static List<String> names(Optional<String> csv) {
            return csv.map(s -> Arrays.stream(s.split(",")).map(String::trim).filter(x -> !x.isEmpty() && !x.equalsIgnoreCase("none")).toList())
                    .orElse(List.of());
        }
    }
}
