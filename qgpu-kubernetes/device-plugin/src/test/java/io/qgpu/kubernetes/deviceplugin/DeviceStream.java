package io.qgpu.kubernetes.deviceplugin;

import static org.junit.jupiter.api.Assertions.fail;

import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import io.qgpu.kubernetes.deviceplugin.v1beta1.DevicePluginGrpc;
import io.qgpu.kubernetes.deviceplugin.v1beta1.Empty;
import io.qgpu.kubernetes.deviceplugin.v1beta1.ListAndWatchResponse;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/** A kubelet's ListAndWatch stream: collects the device lists and waits for one that matches. */
final class DeviceStream {
    private final BlockingQueue<Object> lists = new LinkedBlockingQueue<>();
    private ListAndWatchResponse last;

    DeviceStream(ManagedChannel channel) {
        DevicePluginGrpc.newStub(channel).listAndWatch(Empty.getDefaultInstance(), new StreamObserver<>() {
            @Override
            public void onNext(ListAndWatchResponse value) {
                lists.add(value);
            }

            @Override
            public void onError(Throwable t) {
                lists.add(t);
            }

            @Override
            public void onCompleted() {
                lists.add("completed");
            }
        });
    }

    /** Waits for a list that matches; fails with the last list seen after the timeout. */
    ListAndWatchResponse await(String what, Predicate<ListAndWatchResponse> p) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(FakeKubelet.TIMEOUT_SECONDS);
        while (true) {
            long left = deadline - System.nanoTime();
            Object o = left <= 0 ? null : lists.poll(left, TimeUnit.NANOSECONDS);
            if (o == null) {
                fail("no device list with " + what + " within " + FakeKubelet.TIMEOUT_SECONDS + " s; last: " + last);
            }
            if (!(o instanceof ListAndWatchResponse r)) {
                fail("the stream ended while waiting for " + what + ": " + o);
                return null;
            }
            last = r;
            if (p.test(r)) {
                return r;
            }
        }
    }

    /** The first list. */
    ListAndWatchResponse first() throws InterruptedException {
        return await("any devices", r -> true);
    }
}
