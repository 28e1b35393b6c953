package io.qgpu.kubernetes.extender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The generator's binders against a plain-socket HTTP/1.1 server whose behaviour each test picks per
 * request (answer, answer and close, close without answering, answer in pieces): every request is
 * answered to its callback exactly once, with the server's status and body or as a failure, and the
 * connections that broke are connected again.
 */
class LoopbackBindsTest {
    /** What the server does with request number {@code k} (from 0, over all connections). */
    enum Act { ANSWER, ANSWER_AND_CLOSE, CLOSE_WITHOUT_ANSWER, ANSWER_IN_PIECES }

    private final List<Socket> open = new CopyOnWriteArrayList<>();
    private ServerSocket server;
    private final AtomicInteger accepted = new AtomicInteger();

    @AfterEach
    void stop() throws IOException {
        if (server != null) {
            server.close();
        }
        for (Socket s : open) {
            s.close();
        }
    }

    private InetSocketAddress serve(IntFunction<Act> act) throws IOException {
        server = new ServerSocket(0, 128, InetAddress.getLoopbackAddress());
        AtomicInteger requests = new AtomicInteger();
        Thread acceptor = new Thread(() -> {
            while (!server.isClosed()) {
                try {
                    Socket s = server.accept();
                    s.setTcpNoDelay(true);
                    accepted.incrementAndGet();
                    open.add(s);
                    Thread t = new Thread(() -> connection(s, requests, act));
                    t.setDaemon(true);
                    t.start();
                } catch (IOException e) {
                    return;
                }
            }
        });
        acceptor.setDaemon(true);
        acceptor.start();
        return new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getLocalPort());
    }

    /** Reads requests (head, then Content-Length bytes) and acts on each; the body is echoed in the answer. */
    private static void connection(Socket s, AtomicInteger requests, IntFunction<Act> act) {
        try (s) {
            InputStream in = new BufferedInputStream(s.getInputStream());
            OutputStream out = s.getOutputStream();
            while (true) {
                int length = -1;
                String line;
                while (!(line = line(in)).isEmpty()) {
                    if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
                        length = Integer.parseInt(line.substring(15).trim());
                    }
                }
                byte[] body = in.readNBytes(length);
                Act a = act.apply(requests.getAndIncrement());
                if (a == Act.CLOSE_WITHOUT_ANSWER) {
                    return;
                }
                byte[] answer = ("{\"echo\":" + new String(body, StandardCharsets.UTF_8) + "}").getBytes(StandardCharsets.UTF_8);
                byte[] head = ("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + answer.length
                        + (a == Act.ANSWER_AND_CLOSE ? "\r\nConnection: close" : "") + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
                if (a == Act.ANSWER_IN_PIECES) {
                    for (byte[] part : new byte[][] {head, answer}) {
                        for (int i = 0; i < part.length; i += 7) {
                            out.write(part, i, Math.min(7, part.length - i));
                            out.flush();
                            Thread.yield();
                        }
                    }
                } else {
                    byte[] whole = new byte[head.length + answer.length];
                    System.arraycopy(head, 0, whole, 0, head.length);
                    System.arraycopy(answer, 0, whole, head.length, answer.length);
                    out.write(whole);
                    out.flush();
                }
                if (a == Act.ANSWER_AND_CLOSE) {
                    return;
                }
            }
        } catch (IOException | RuntimeException e) {
            // the client went away
        }
    }

    private static String line(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        int c;
        while ((c = in.read()) >= 0 && c != '\n') {
            if (c != '\r') {
                b.append((char) c);
            }
        }
        if (c < 0) {
            throw new IOException("closed");
        }
        return b.toString();
    }

    /** The binders' reader threads made by {@link #daemon}, to check that close ends them. */
    private static final List<Thread> READERS = new CopyOnWriteArrayList<>();

    private static Thread daemon(Runnable r) {
        Thread t = new Thread(r, "test-binds");
        t.setDaemon(true);
        READERS.add(t);
        return t;
    }

    /** Posts {@code count} bodies {@code {"i":k}}; the answers by k (status, body), each counted. */
    private static Map<Integer, LoopbackBinds.Answer> postAll(InetSocketAddress at, int connections, int count) throws Exception {
        Map<Integer, LoopbackBinds.Answer> answers = new ConcurrentHashMap<>();
        AtomicInteger twice = new AtomicInteger();
        byte[] head = LoopbackClient.headPrefix("127.0.0.1", "/qgpu/bind");
        try (LoopbackBinds binds = new LoopbackBinds(at, connections, LoopbackBindsTest::daemon)) {
            for (int k = 0; k < count; k++) {
                int key = k;
                binds.post(head, ("{\"i\":" + k + "}").getBytes(StandardCharsets.UTF_8), a -> {
                    if (answers.put(key, a) != null) {
                        twice.incrementAndGet();
                    }
                });
            }
            assertTrue(binds.awaitIdle(30, TimeUnit.SECONDS), "every request answered");
        }
        READERS.forEach(t -> assertTrue(!t.isAlive(), "close ended the reader thread"));
        assertEquals(0, twice.get(), "no request is answered twice");
        assertEquals(count, answers.size(), "every request is answered");
        return answers;
    }

    @Test
    void everyRequestIsAnsweredOnceWithItsOwnAnswerWithManyInFlight() throws Exception {
        Map<Integer, LoopbackBinds.Answer> answers = postAll(serve(k -> Act.ANSWER), 16, 2_000);
        answers.forEach((k, a) -> {
            assertEquals(200, a.status());
            assertEquals("{\"echo\":{\"i\":" + k + "}}", new String(a.body(), StandardCharsets.UTF_8));
        });
        assertEquals(16, accepted.get(), "one connection per binder, kept alive");
    }

    @Test
    void answersThatArriveInPiecesAreReadWhole() throws Exception {
        Map<Integer, LoopbackBinds.Answer> answers = postAll(serve(k -> Act.ANSWER_IN_PIECES), 4, 60);
        answers.forEach((k, a) -> assertEquals("{\"echo\":{\"i\":" + k + "}}", new String(a.body(), StandardCharsets.UTF_8)));
    }

    @Test
    void aConnectionTheServerClosesAfterAnAnswerIsConnectedAgain() throws Exception {
        Map<Integer, LoopbackBinds.Answer> answers = postAll(serve(k -> k % 3 == 0 ? Act.ANSWER_AND_CLOSE : Act.ANSWER), 4, 300);
        answers.values().forEach(a -> assertEquals(200, a.status()));
        // 100 answers closed their connection; each was connected again before its next request (the
        // last ones closed on each of the 4 connections may have had no next request)
        assertTrue(accepted.get() >= 4 + 100 - 4 && accepted.get() <= 4 + 100, "a new connection for each one closed: " + accepted.get());
    }

    @Test
    void aRequestWhoseAnswerIsLostIsAFailureAndTheOthersGoOn() throws Exception {
        Map<Integer, LoopbackBinds.Answer> answers = postAll(serve(k -> k % 10 == 5 ? Act.CLOSE_WITHOUT_ANSWER : Act.ANSWER), 4, 200);
        long failed = answers.values().stream().filter(a -> a.status() == -1).count();
        long ok = answers.values().stream().filter(a -> a.status() == 200).count();
        // the server numbers requests in the order it reads them, which is not the order they were sent
        assertEquals(20, failed, "one in ten lost");
        assertEquals(180, ok);
    }

    @Test
    void aBodyLargerThanTheBufferIsRefusedBeforeAnyConnectionIsTaken() throws Exception {
        InetSocketAddress at = serve(k -> Act.ANSWER);
        byte[] head = LoopbackClient.headPrefix("127.0.0.1", "/qgpu/bind");
        try (LoopbackBinds binds = new LoopbackBinds(at, 1, LoopbackBindsTest::daemon)) {
            assertThrows(IllegalArgumentException.class, () -> binds.post(head, new byte[8192], a -> { }));
            CountDownLatch one = new CountDownLatch(1);
            binds.post(head, "{}".getBytes(StandardCharsets.UTF_8), a -> one.countDown());   // the one connection is still free
            assertTrue(one.await(10, TimeUnit.SECONDS));
        }
    }
}
