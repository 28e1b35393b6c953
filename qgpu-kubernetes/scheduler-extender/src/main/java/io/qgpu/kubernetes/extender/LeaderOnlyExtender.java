package io.qgpu.kubernetes.extender;

import io.qgpu.api.Validate;
import java.util.List;

/**
 * Lets only the leader answer: while {@link LeaderElection#leading()} is false, every verb is
 * refused with {@link NotLeaderException} (HTTP 503), filter and prioritize as well as bind.
 *
 * <p>Why followers refuse filter and prioritize too: a follower's ledger is not kept current with
 * the leader's binds (it is rebuilt from the pods' annotations when the replica takes over), so its
 * answers could disagree with the leader's. kube-scheduler treats a refused call as a failed
 * scheduling attempt and retries the pod; readiness ({@code GET /readyz}, 503 on followers) takes
 * followers out of the Service's endpoints, so a refusal only happens in the moment between a change
 * of leader and the endpoints catching up.
 *
 * <pre>{@code
 * Extender served = new LeaderOnlyExtender(gpuExtender, election);
 * ExtenderServer.builder(served).readiness(election::leading).build().start();
 * }</pre>
 *
 * <p>Thread safety: thread-safe if the wrapped extender is.
 */
public final class LeaderOnlyExtender implements Extender {
    private final Extender delegate;
    private final LeaderElection election;

    public LeaderOnlyExtender(Extender delegate, LeaderElection election) {
        this.delegate = Validate.notNull("delegate", delegate);
        this.election = Validate.notNull("election", election);
    }

    @Override
    public ExtenderProtocol.FilterResult filter(ExtenderRequests.Args args) {
        requireLeader();
        return delegate.filter(args);
    }

    @Override
    public List<ExtenderProtocol.HostPriority> prioritize(ExtenderRequests.Args args) {
        requireLeader();
        return delegate.prioritize(args);
    }

    @Override
    public ExtenderProtocol.BindingResult bind(ExtenderProtocol.BindingArgs args) {
        requireLeader();
        return delegate.bind(args);
    }

    @Override
    public boolean bindWaitsOnNetwork() {
        return delegate.bindWaitsOnNetwork();
    }

    @Override
    public ExtenderProtocol.PreemptionResult preempt(ExtenderRequests.PreemptionArgs args) {
        requireLeader();
        return delegate.preempt(args);
    }

    private void requireLeader() {
        if (!election.leading()) {
            throw new NotLeaderException(election.settings().identity(), election.leader());
        }
    }
}
