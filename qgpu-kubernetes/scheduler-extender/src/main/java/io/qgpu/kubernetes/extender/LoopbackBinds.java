package io.qgpu.kubernetes.extender;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.ThreadFactory;

/**
 * The load generator's binders in kube-scheduler's pattern: up to {@code n} requests in flight at once,
 * each on a kept-alive HTTP/1.1 connection of its own. The caller's thread writes a request on a free
 * connection (waiting while every one is busy) and goes on; one reader thread, on a selector over all
 * the connections, reads each answer as it arrives and hands it to the request's callback. So a bind
 * costs the caller one write and the reader one read (several answers per wake-up when many are in
 * flight), where a pool of blocking binder threads cost a hand-over between threads and a blocking
 * read per bind: the generator shares the machine with the extender it measures.
 *
 * <p>Answers are read by their {@code Content-Length} (no chunked answers). A request whose write
 * fails, or whose answer is lost (the connection closed or broke), is answered to its callback as a
 * failure ({@link Answer#status()} {@code -1}), once; the connection is connected again before the
 * next request on it. Only the caller's thread connects; only the reader reads and closes.
 *
 * <pre>{@code
 * try (LoopbackBinds binds = new LoopbackBinds(address, 64, Thread::new)) {
 *     binds.post(head, body, a -> System.out.println(a.status()));   // returns once written
 *     binds.awaitIdle(60, TimeUnit.SECONDS);                          // every answer handed over
 * }
 * }</pre>
 *
 * <p>Thread safety: {@link #post} from one thread at a time (the caller's); callbacks run on the
 * reader thread, one at a time; {@link #awaitIdle} and {@link #close} from the caller's thread.
 */
final class LoopbackBinds implements AutoCloseable {
    private static final byte[] HEAD_END = "\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

    /** An answer: the status (-1 when there was none) and the body. */
    record Answer(int status, byte[] body, long sentNanos) {
    }

    /** What is done with an answer, on the reader thread. */
    @FunctionalInterface
    interface Callback {
        void answered(Answer answer);
    }

    /** One connection and the request in flight on it (null when free). */
    private static final class Conn {
        /** Set by the caller's thread while the connection is free; replaced only when closed. */
        volatile SocketChannel channel;
        /** The request in flight; whoever takes it (the answer, or a failure) answers it, once. */
        final AtomicReference<Callback> pending = new AtomicReference<>();
        volatile long sentNanos;
        /** The reader's: what has arrived of the answer. */
        ByteBuffer in = ByteBuffer.allocate(4096);
    }

    private final InetSocketAddress address;
    private final int n;
    private final Selector selector;
    private final BlockingQueue<Conn> free;
    private final Thread reader;
    private final ByteBuffer out = ByteBuffer.allocate(4096);
    private final byte[] digits = new byte[10];
    private volatile boolean closing;

    /** Opens {@code n} connections to {@code address} and starts the reader thread, made by {@code threads}. */
    LoopbackBinds(InetSocketAddress address, int n, ThreadFactory threads) throws IOException {
        this.address = address;
        this.n = n;
        this.selector = Selector.open();
        this.free = new ArrayBlockingQueue<>(n);
        try {
            for (int i = 0; i < n; i++) {
                free.add(open(new Conn()));
            }
        } catch (IOException e) {
            closeAll();
            throw e;
        }
        this.reader = threads.newThread(this::readLoop);
        reader.start();
    }

    /**
     * Writes {@code POST} with {@code body} on a free connection ({@code headPrefix}: the request line
     * and headers up to the value of {@code Content-Length}, as {@link LoopbackClient#headPrefix} makes
     * them), waiting while all {@code n} are busy; {@code done} gets the answer on the reader thread.
     */
    void post(byte[] headPrefix, byte[] body, Callback done) throws InterruptedException {
        if (headPrefix.length + digits.length + HEAD_END.length + body.length > out.capacity()) {
            throw new IllegalArgumentException("request of " + body.length + " bytes is larger than this client's "
                    + out.capacity() + "-byte buffer");
        }
        Conn c = free.take();
        out.clear();
        out.put(headPrefix);
        int d = LoopbackClient.decimal(body.length, digits);
        out.put(digits, d, digits.length - d).put(HEAD_END).put(body).flip();
        if (!c.channel.isOpen()) {
            try {
                open(c);
            } catch (IOException e) {
                done.answered(new Answer(-1, new byte[0], System.nanoTime()));
                free.add(c);   // still closed: the next request tries again
                return;
            }
        }
        c.sentNanos = System.nanoTime();
        c.pending.set(done);
        try {
            writeAll(c.channel, out);
        } catch (IOException e) {
            closeQuietly(c.channel);
            if (c.pending.compareAndSet(done, null)) {   // else the reader saw the connection break and answered it
                done.answered(new Answer(-1, new byte[0], c.sentNanos));
                free.add(c);
            }
        }
    }

    /** Waits until every request written has been answered (true), or the time is up (false). */
    boolean awaitIdle(long timeout, TimeUnit unit) throws InterruptedException {
        long deadline = System.nanoTime() + unit.toNanos(timeout);
        Conn[] taken = new Conn[n];
        int got = 0;
        try {
            while (got < n) {
                Conn c = free.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
                if (c == null) {
                    return false;
                }
                taken[got++] = c;
            }
            return true;
        } finally {
            for (int i = 0; i < got; i++) {
                free.add(taken[i]);
            }
        }
    }

    @Override
    public void close() {
        closing = true;
        selector.wakeup();
        try {
            reader.join(TimeUnit.SECONDS.toMillis(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        closeAll();
    }

    private void closeAll() {
        for (SelectionKey k : selector.keys()) {
            closeQuietly(((Conn) k.attachment()).channel);
        }
        try {
            selector.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    /** Connects {@code c} anew (blocking), then registers it, non-blocking, for reading. */
    private Conn open(Conn c) throws IOException {
        SocketChannel ch = SocketChannel.open();
        try {
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            ch.connect(address);
            ch.configureBlocking(false);
            ch.register(selector, SelectionKey.OP_READ, c);
        } catch (IOException e) {
            closeQuietly(ch);
            throw e;
        }
        c.channel = ch;
        selector.wakeup();   // a registration made while the reader selects takes effect at its next select
        return c;
    }

    private static void writeAll(SocketChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (ch.write(b) == 0) {
                Thread.onSpinWait();   // a request is a few hundred bytes: the socket buffer takes it at once
            }
        }
    }

    private void readLoop() {
        try {
            while (!closing) {
                selector.select();
                for (SelectionKey k : selector.selectedKeys()) {
                    Conn c = (Conn) k.attachment();
                    if (k.isValid() && k.isReadable()) {
                        read(c);
                    }
                }
                selector.selectedKeys().clear();
            }
        } catch (IOException | ClosedSelectorException e) {
            if (!closing) {
                throw new IllegalStateException("the binders' reader failed", e);
            }
        }
    }

    /** Reads what arrived on {@code c}; hands over its answer when whole; closes a connection that broke. */
    private void read(Conn c) {
        SocketChannel ch = c.channel;
        Answer a;
        boolean close;
        try {
            if (!c.in.hasRemaining()) {
                c.in = ByteBuffer.allocate(c.in.capacity() * 2).put(c.in.flip());
            }
            if (ch.read(c.in) < 0) {
                throw new IOException("closed by the server");
            }
            a = whole(c);
            if (a == null) {
                return;
            }
            close = closes;
        } catch (IOException e) {
            c.in.clear();
            closeQuietly(ch);
            Callback lost = c.pending.getAndSet(null);
            if (lost != null) {
                lost.answered(new Answer(-1, new byte[0], c.sentNanos));
                free.add(c);
            }
            return;
        }
        c.in.clear();
        if (close) {
            closeQuietly(ch);   // the caller connects again before the next request on it
        }
        Callback done = c.pending.getAndSet(null);
        if (done == null) {
            closeQuietly(ch);   // an answer nobody asked for: the connection is out of step
            return;
        }
        done.answered(a);   // before the connection is free: awaitIdle then means every callback has run
        free.add(c);
    }

    /** Whether the last whole answer ({@link #whole}) asked to close its connection; the reader's. */
    private boolean closes;

    /**
     * The answer in {@code c.in} when it is whole (and in {@link #closes} whether it closes its
     * connection), else null.
     */
    private Answer whole(Conn c) throws IOException {
        ByteBuffer b = c.in;
        byte[] a = b.array();
        int end = b.position();
        int headEnd = indexOf(a, end, HEAD_END);
        if (headEnd < 0) {
            return null;
        }
        LoopbackClient.AnswerHead head = LoopbackClient.AnswerHead.of(
                Arrays.asList(new String(a, 0, headEnd, StandardCharsets.ISO_8859_1).split("\r\n")));
        int length = head.length();
        int bodyStart = headEnd + HEAD_END.length;
        if (end < bodyStart + length) {
            return null;
        }
        if (end > bodyStart + length) {
            throw new IOException((end - bodyStart - length) + " bytes after the answer, none asked for");
        }
        closes = head.close();
        return new Answer(head.status(), Arrays.copyOfRange(a, bodyStart, bodyStart + length), c.sentNanos);
    }

    private static int indexOf(byte[] a, int end, byte[] what) {
        outer:
        for (int i = 0; i + what.length <= end; i++) {
            for (int j = 0; j < what.length; j++) {
                if (a[i + j] != what[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    private static void closeQuietly(SocketChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }

}
