package io.qgpu.kubernetes.extender;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The load generator's HTTP/1.1 client: one kept-alive connection, blocking, one request at a time,
 * {@code POST} with a {@code Content-Length} body, answers read by their {@code Content-Length}. It
 * does only what the generator needs, so that the generator, which shares the machine with the
 * extender it measures, costs little CPU (the JDK's {@code HttpClient} hands every exchange between
 * threads): the request's head and body parts go through one buffer (one write per request when they
 * fit its 64 KiB) without being joined into a new array first, and each answer's body is read into an
 * array of its own length, once. A connection the server closed is opened again for the next request.
 *
 * <pre>{@code
 * byte[] head = LoopbackClient.headPrefix("127.0.0.1:8888", "/qgpu/filter");
 * try (LoopbackClient c = new LoopbackClient(address, 30_000)) {
 *     LoopbackClient.Answer a = c.post(head, podKey, pod, namesKey, names, end);   // the body is the parts in order
 * }
 * }</pre>
 *
 * <p>Thread safety: not thread-safe; one per driver thread.
 */
final class LoopbackClient implements AutoCloseable {
    private static final byte[] HEAD_END = "\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

    private final InetSocketAddress address;
    private final int timeoutMillis;
    private final StringBuilder line = new StringBuilder(64);
    private final byte[] digits = new byte[10];
    private Socket socket;
    private InputStream in;
    private BufferedOutputStream out;

    /** An answer: the status and the body. */
    record Answer(int status, byte[] body) {
    }

    /** What an answer's head says: its status, its body's length and whether it closes the connection. */
    record AnswerHead(int status, int length, boolean close) {
        /**
         * Reads the status line and headers ({@code lines}, the blank line after them left out); an
         * IOException for a head this client cannot read (no HTTP/1.1 status, no {@code Content-Length},
         * a chunked answer).
         */
        static AnswerHead of(List<String> lines) throws IOException {
            String status = lines.isEmpty() ? "" : lines.get(0);
            if (!status.startsWith("HTTP/1.1 ") || status.length() < 12) {
                throw new IOException("not an HTTP/1.1 status line: " + status);
            }
            int length = -1;
            boolean close = false;
            for (String h : lines.subList(1, lines.size())) {
                String lower = h.toLowerCase(Locale.ROOT);
                if (lower.startsWith("content-length:")) {
                    length = Integer.parseInt(h.substring(15).trim());
                } else if (lower.startsWith("connection:") && lower.contains("close")) {
                    close = true;
                } else if (lower.startsWith("transfer-encoding:")) {
                    throw new IOException("chunked answers are not read by this client: " + h);
                }
            }
            if (length < 0) {
                throw new IOException("answer without Content-Length");
            }
            return new AnswerHead(Integer.parseInt(status.substring(9, 12)), length, close);
        }
    }

    LoopbackClient(InetSocketAddress address, int timeoutMillis) {
        this.address = address;
        this.timeoutMillis = timeoutMillis;
    }

    /**
     * {@code POST} with a JSON body made of {@code parts} in order; {@code headPrefix} is
     * {@link #headPrefix}'s for the path. The answer, or an IOException when there was none.
     */
    Answer post(byte[] headPrefix, byte[]... parts) throws IOException {
        boolean fresh = socket == null;
        try {
            return exchange(headPrefix, parts);
        } catch (IOException e) {
            close();
            if (fresh) {
                throw e;
            }
            return exchange(headPrefix, parts);   // the server had closed the kept-alive connection: once more on a new one
        }
    }

    /** The request line and headers of a POST to {@code path}, up to the value of {@code Content-Length}. */
    static byte[] headPrefix(String host, String path) {
        return ("POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nContent-Length: ")
                .getBytes(StandardCharsets.US_ASCII);
    }

    private Answer exchange(byte[] headPrefix, byte[][] parts) throws IOException {
        if (socket == null) {
            Socket s = new Socket();
            s.setTcpNoDelay(true);
            s.setSoTimeout(timeoutMillis);
            s.connect(address, timeoutMillis);
            socket = s;
            in = new BufferedInputStream(s.getInputStream(), 65536);
            out = new BufferedOutputStream(s.getOutputStream(), 65536);
        }
        int length = 0;
        for (byte[] part : parts) {
            length += part.length;
        }
        out.write(headPrefix);
        writeDecimal(length);
        out.write(HEAD_END);
        for (byte[] part : parts) {
            out.write(part);
        }
        out.flush();
        List<String> lines = new ArrayList<>(8);
        for (String h = line(); !h.isEmpty(); h = line()) {
            lines.add(h);
        }
        AnswerHead head = AnswerHead.of(lines);
        byte[] answer = new byte[head.length()];
        int read = in.readNBytes(answer, 0, head.length());
        if (read < head.length()) {
            throw new IOException("answer cut short: " + read + " of " + head.length() + " bytes");
        }
        if (head.close()) {
            close();
        }
        return new Answer(head.status(), answer);
    }

    /** {@code value} (at least 0) in ASCII decimal digits, into the request. */
    private void writeDecimal(int value) throws IOException {
        int from = decimal(value, digits);
        out.write(digits, from, digits.length - from);
    }

    /**
     * Writes {@code value} (at least 0) in ASCII decimal digits at the end of {@code digits} (room for
     * ten); the index of the first digit.
     */
    static int decimal(int value, byte[] digits) {
        int n = digits.length;
        do {
            digits[--n] = (byte) ('0' + value % 10);
            value /= 10;
        } while (value > 0);
        return n;
    }

    private String line() throws IOException {
        StringBuilder b = line;
        b.setLength(0);
        int c;
        while ((c = in.read()) >= 0) {
            if (c == '\n') {
                int n = b.length();
                return n > 0 && b.charAt(n - 1) == '\r' ? b.substring(0, n - 1) : b.toString();
            }
            b.append((char) c);
        }
        throw new IOException("connection closed");
    }

    @Override
    public void close() {
        if (socket != null) {
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing anyway
            }
            socket = null;
        }
    }
}
