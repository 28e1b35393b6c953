package io.qgpu.core.gate;

import static io.qgpu.core.gate.FakeClock.MS;
import static io.qgpu.core.gate.FakeClock.S;
import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.api.InvalidValueException;
import io.qgpu.api.PriorityClass;
import io.qgpu.core.gate.internal.SystemGateTimer;
import io.qgpu.core.preempt.GpuMode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The public surface of the gate, call by call: what each accessor, snapshot and error says. */
@Timeout(60) // a hang guard only; no test depends on wall time for its verdict
class GateApiTest {

    private static final long T0 = 5 * S;

    private static Gate gate(FakeClock clock) {
        return Gate.create("GPU-api", clock.config().usageReportInterval(Duration.ZERO).build());
    }

    @Test
    void handlesDescribeThemselves() throws Exception {
        FakeClock clock = new FakeClock(T0);
        try (Gate gate = gate(clock)) {
            assertEquals("GPU-api", gate.gpu());
            assertEquals("Gate[GPU-api]", gate.toString());
            assertEquals(0, gate.config().usageReportIntervalNanos());
            Tenant chat = gate.register(GateTenantSpec.online("chat").request(10).limit(50).build());
            Tenant train = gate.register(GateTenantSpec.offline("train").build());
            assertEquals("chat", chat.name());
            assertEquals(PriorityClass.ONLINE, chat.priority());
            assertEquals(PriorityClass.OFFLINE, train.priority());
            assertSame(gate, chat.gate());
            assertEquals(GateTenantSpec.online("chat").request(10).limit(50).build(), chat.spec());
            assertEquals("Tenant[chat online 10/50% on GPU-api]", chat.toString());
            assertEquals(List.of(chat, train), gate.tenants());
            assertEquals(GpuMode.OFFLINE, gate.mode());
            Lease l = gate.acquire(train);
            assertSame(train, l.tenant());
            assertEquals(T0, l.acquiredAtNanos());
            assertEquals("Lease[train on GPU-api, running]", l.toString());
            assertEquals(1, train.runningLeases());
            assertFalse(l.shouldYield());
            CompletableFuture<Lease> on = gate.acquireAsync(chat);
            assertTrue(l.shouldYield(), "online waits: the offline lease must yield");
            CompletableFuture<Lease> parked = l.checkpointAsync();
            assertEquals("Lease[train on GPU-api, parked]", l.toString());
            assertTrue(l.shouldYield());
            assertEquals(GpuMode.ONLINE, gate.mode());
            Lease online = on.join();
            online.close();
            clock.advance(100 * MS);
            assertSame(l, parked.join());
            l.close();
            assertEquals("Lease[train on GPU-api, closed]", l.toString());
            assertTrue(l.shouldYield());
            assertEquals(0, gate.openLeases());
        }
    }

    @Test
    void usageSnapshots() throws Exception {
        FakeClock clock = new FakeClock(T0);
        try (Gate gate = Gate.create("GPU-api", clock.config().usageReportInterval(Duration.ZERO)
                .policy(io.qgpu.api.IsolationPolicy.ELASTIC).build())) {
            Tenant chat = gate.register(GateTenantSpec.online("chat").limit(50).build());
            Lease a = gate.acquire(chat);
            Lease b = gate.acquire(chat);
            clock.advance(2 * S);
            TenantUsage u = gate.usage(chat);
            assertEquals("chat", u.tenant());
            assertEquals(2 * S, u.usageNanos(), "concurrent leases count once");
            assertEquals(2 * S, u.correctedUsageNanos());
            assertEquals(1.0, u.correctionFactor());
            assertEquals(5 * S, u.limitNanos());
            assertEquals(10 * S, u.windowNanos());
            assertEquals(2, u.runningLeases());
            assertEquals(0, u.parkedLeases());
            assertEquals(2, u.openLeases());
            assertEquals(0.2, u.share(), 1e-12);
            assertEquals(2 * S, u.totalLeaseNanos());
            assertEquals(List.of(u), gate.usage());
            assertEquals(1.0, gate.correctionFactor());
            a.close();
            b.close();
            clock.advance(11 * S);
            assertEquals(0, gate.usage(chat).usageNanos());
            assertEquals(2 * S, gate.usage(chat).totalLeaseNanos());
        }
    }

    @Test
    void errorsSayWhatAndWhere() throws Exception {
        FakeClock clock = new FakeClock(T0);
        Gate gate = gate(clock);
        Tenant chat = gate.register(GateTenantSpec.online("chat").build());
        GateStateException dup = assertThrows(GateStateException.class,
                () -> gate.register(GateTenantSpec.online("chat").build()));
        assertEquals("chat", dup.tenant());
        assertEquals("gate GPU-api: tenant \"chat\" is already registered", dup.getMessage());
        Tenant stranger = new Tenant() {
            @Override
            public String name() {
                return "stranger";
            }

            @Override
            public GateTenantSpec spec() {
                return GateTenantSpec.online("stranger").build();
            }

            @Override
            public Gate gate() {
                return gate;
            }

            @Override
            public int runningLeases() {
                return 0;
            }
        };
        GateStateException foreign = assertThrows(GateStateException.class, () -> gate.acquire(stranger));
        assertEquals("stranger", foreign.tenant());
        assertThrows(GateStateException.class, () -> gate.tryAcquire(stranger));
        assertThrows(GateStateException.class, () -> gate.acquireAsync(stranger));
        assertThrows(GateStateException.class, () -> gate.usage(stranger));
        assertThrows(GateStateException.class, () -> gate.unregister(stranger));
        InvalidValueException neg = assertThrows(InvalidValueException.class,
                () -> gate.acquire(chat, Duration.ofMillis(-1)));
        assertEquals("gate.acquire.timeout", neg.field());
        assertThrows(InvalidValueException.class, () -> gate.acquireAsync(chat, Duration.ofMillis(-1)));
        assertThrows(InvalidValueException.class, () -> gate.register(null));
        gate.acquire(chat, Duration.ofSeconds(Long.MAX_VALUE)).close();    // too long for nanos: no limit
        GateTimeoutException t = new GateTimeoutException("GPU-x", "t", Duration.ofMillis(3));
        assertEquals("t", t.tenant());
        assertEquals(Duration.ofMillis(3), t.timeout());
        assertEquals("gate GPU-x: tenant \"t\" got no GPU time within 3ms", t.getMessage());
        gate.close();
        assertTrue(gate.isClosed());
        assertThrows(GateClosedException.class, () -> gate.acquire(chat));
        assertThrows(GateClosedException.class, () -> gate.tryAcquire(chat));
        assertThrows(GateClosedException.class, () -> gate.acquireAsync(chat));
        assertEquals(0, gate.reclaimDeadOwners());
        assertTrue(new GateClosedException("GPU-x").getMessage().contains("GPU-x"));
    }

    @Test
    void listenersComeAndGoAndAFailingOneDoesNotStopTheOthers() throws Exception {
        FakeClock clock = new FakeClock(T0);
        try (Gate gate = gate(clock)) {
            Tenant chat = gate.register(GateTenantSpec.online("chat").build());
            assertFalse(gate.hasListeners());
            List<GateEvent> seen = new ArrayList<>();
            GateListener failing = e -> {
                throw new IllegalStateException("listener bug");
            };
            GateListener recording = seen::add;
            gate.addListener(failing);
            gate.addListener(recording);
            assertTrue(gate.hasListeners());
            gate.acquire(chat).close();
            assertEquals(3, seen.size(), seen.toString());
            assertInstanceOf(GateEvent.ModeChanged.class, seen.get(0));
            assertInstanceOf(GateEvent.LeaseGranted.class, seen.get(1));
            assertInstanceOf(GateEvent.LeaseReleased.class, seen.get(2));
            gate.removeListener(e -> { });              // absent: no effect
            gate.removeListener(failing);
            assertTrue(gate.hasListeners());
            gate.removeListener(recording);
            assertFalse(gate.hasListeners());
            gate.acquire(chat).close();
            assertEquals(3, seen.size());
            assertThrows(InvalidValueException.class, () -> gate.addListener(null));
        }
    }

    @Test
    void unregisterFreesTheNameAndTheToken() throws Exception {
        FakeClock clock = new FakeClock(T0);
        try (Gate gate = gate(clock)) {
            Tenant a = gate.register(GateTenantSpec.offline("a").build());
            Tenant b = gate.register(GateTenantSpec.offline("b").build());
            gate.acquire(a).close();                    // a holds the token, idle
            gate.unregister(a);
            assertEquals(List.of(b), gate.tenants());
            assertTrue(gate.tryAcquire(b).isPresent(), "the token went with a");
            assertThrows(GateStateException.class, () -> gate.acquire(a));
            GateStateException busy = assertThrows(GateStateException.class, () -> gate.unregister(b));
            assertTrue(busy.getMessage().contains("1 open leases and 0 waiting acquires"), busy.getMessage());
        }
    }

    @Test
    void manualTimerRunsDueTasksInOrderAndForgetsCancelledOnes() {
        FakeClock clock = new FakeClock(0);
        ManualGateTimer timer = new ManualGateTimer(clock);
        assertEquals(Long.MAX_VALUE, timer.nextAt());
        List<String> ran = new ArrayList<>();
        timer.schedule(20, () -> ran.add("b"));
        timer.schedule(10, () -> ran.add("a"));
        GateTimer.Task c = timer.schedule(15, () -> ran.add("cancelled"));
        timer.schedule(20, () -> ran.add("b2"));
        assertEquals(4, timer.pending());
        assertEquals(10, timer.nextAt());
        c.cancel();
        assertEquals(3, timer.pending());
        clock.jump(9);
        assertEquals(0, timer.runDue());
        clock.jump(20);
        assertEquals(3, timer.runDue());
        assertEquals(List.of("a", "b", "b2"), ran);
        assertEquals(0, timer.pending());
        assertThrows(InvalidValueException.class, () -> timer.schedule(1, null));
        assertThrows(InvalidValueException.class, () -> new ManualGateTimer(null));
    }

    @Test
    void systemTimerThreadsAreDaemonsAndItsTasksCanBeCancelled() throws Exception {
        SystemGateTimer timer = new SystemGateTimer(System::nanoTime);
        try {
            AtomicInteger never = new AtomicInteger();
            GateTimer.Task far = timer.schedule(System.nanoTime() + 3_600_000_000_000L, never::incrementAndGet);
            far.cancel();
            CompletableFuture<Thread> ranOn = new CompletableFuture<>();
            timer.schedule(System.nanoTime(), () -> ranOn.complete(Thread.currentThread()));
            Thread t = ranOn.get(10, TimeUnit.SECONDS);    // a hang guard only
            assertTrue(t.isDaemon(), "a timer thread must not keep the JVM alive");
            assertTrue(t.getName().startsWith("qgpu-gate-timer-"), t.getName());
            assertEquals(0, never.get());
        } finally {
            timer.shutdown();
        }
    }

    @Test
    void systemTimerRunsTasksAndItsViewsDropTasksAfterShutdown() throws Exception {
        SystemGateTimer timer = new SystemGateTimer(System::nanoTime);
        CountDownLatch ran = new CountDownLatch(2);
        timer.schedule(System.nanoTime(), ran::countDown);
        AtomicInteger fake = new AtomicInteger(1000);
        GateTimer view = timer.forTicker(fake::get);
        view.schedule(900, ran::countDown);           // past on the view's ticker: at once
        assertTrue(ran.await(10, TimeUnit.SECONDS));
        AtomicInteger never = new AtomicInteger();
        GateTimer.Task far = view.schedule(1000 + 3_600_000_000_000L, never::incrementAndGet);
        far.cancel();
        view.shutdown();                               // a view does not stop the thread
        CountDownLatch after = new CountDownLatch(1);
        view.schedule(0, after::countDown);
        assertTrue(after.await(10, TimeUnit.SECONDS));
        timer.shutdown();
        GateTimer.Task dropped = view.schedule(0, never::incrementAndGet);
        dropped.cancel();
        assertEquals(0, never.get());
        assertThrows(InvalidValueException.class, () -> view.schedule(0, null));
        assertThrows(InvalidValueException.class, () -> timer.forTicker(null));
        assertThrows(InvalidValueException.class, () -> new SystemGateTimer(null));
    }
}
