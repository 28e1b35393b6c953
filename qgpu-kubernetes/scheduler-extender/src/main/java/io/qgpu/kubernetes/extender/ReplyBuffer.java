package io.qgpu.kubernetes.extender;

import java.io.OutputStream;
import java.util.Arrays;

/**
 * A growable byte buffer that a reply is written into once and sent from ({@link #array()} up to
 * {@link #size()}): unlike {@link java.io.ByteArrayOutputStream}, its writes take no lock (a
 * prioritize reply of 500 hosts is some 4,000 small writes) and its bytes are not copied out to be
 * sent. The server keeps one per request thread and {@link #reset}s it for the next reply.
 *
 * <pre>{@code
 * ReplyBuffer b = new ReplyBuffer(256);
 * b.write('[');
 * b.write(']');
 * out.write(b.array(), 0, b.size());   // []
 * b.reset();
 * }</pre>
 *
 * <p>Thread safety: not thread-safe; one per thread.
 */
final class ReplyBuffer extends OutputStream {
    private byte[] buf;
    private int size;

    ReplyBuffer(int capacity) {
        this.buf = new byte[Math.max(16, capacity)];
    }

    @Override
    public void write(int b) {
        if (size == buf.length) {
            grow(size + 1);
        }
        buf[size++] = (byte) b;
    }

    @Override
    public void write(byte[] b, int off, int len) {
        java.util.Objects.checkFromIndexSize(off, len, b.length);
        if (size + len > buf.length) {
            grow(size + len);
        }
        System.arraycopy(b, off, buf, size, len);
        size += len;
    }

    private void grow(int needed) {
        if (needed < 0) {
            throw new OutOfMemoryError("reply over 2 GiB");
        }
        buf = Arrays.copyOf(buf, Math.max(needed, buf.length < (1 << 30) ? buf.length * 2 : Integer.MAX_VALUE - 8));
    }

    /** The bytes written so far are {@code array()[0, size())}; the array is this buffer's own. */
    byte[] array() {
        return buf;
    }

    /** How many bytes were written since the last {@link #reset}. */
    int size() {
        return size;
    }

    /** Empties the buffer (its array is kept). */
    void reset() {
        size = 0;
    }

    /** How large the array is now (the server drops a buffer that one large reply made large). */
    int capacity() {
        return buf.length;
    }

    /** A copy of the bytes written. */
    byte[] toByteArray() {
        return Arrays.copyOf(buf, size);
    }
}
