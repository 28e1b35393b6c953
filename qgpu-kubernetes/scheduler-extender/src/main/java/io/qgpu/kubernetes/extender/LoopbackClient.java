package io.qgpu.kubernetes.extender;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * The load generator's HTTP/1.1 client: one kept-alive connection, blocking, one request at a time,
 * {@code POST} with a {@code Content-Length} body, answers read by their {@code Content-Length}. It
 * does only what the generator needs, so that the generator, which shares the machine with the
 * extender it measures, costs little CPU (the JDK's {@code HttpClient} hands every exchange between
 * threads). A connection the server closed is opened again for the next request.
 *
 * <p>Thread safety: not thread-safe; one per driver thread.
 */
final class LoopbackClient implements AutoCloseable {
    private final InetSocketAddress address;
    private final int timeoutMillis;
    private Socket socket;
    private InputStream in;
    private OutputStream out;

    /** An answer: the status and the body. */
    record Answer(int status, byte[] body) {
    }

    LoopbackClient(InetSocketAddress address, int timeoutMillis) {
        this.address = address;
        this.timeoutMillis = timeoutMillis;
    }

    /** {@code POST path} with a JSON body; the answer, or an IOException when there was none. */
    Answer post(byte[] head, byte[] body) throws IOException {
        boolean fresh = socket == null;
        try {
            return exchange(head, body);
        } catch (IOException e) {
            close();
            if (fresh) {
                throw e;
            }
            return exchange(head, body);   // the server had closed the kept-alive connection: once more on a new one
        }
    }

    /** The request line and headers of a POST to {@code path} with a body of {@code length} bytes. */
    static byte[] head(String host, String path, int length) {
        return ("POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nContent-Length: "
                + length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
    }

    private Answer exchange(byte[] head, byte[] body) throws IOException {
        if (socket == null) {
            Socket s = new Socket();
            s.setTcpNoDelay(true);
            s.setSoTimeout(timeoutMillis);
            s.connect(address, timeoutMillis);
            socket = s;
            in = new BufferedInputStream(s.getInputStream(), 65536);
            out = s.getOutputStream();
        }
        byte[] request = new byte[head.length + body.length];
        System.arraycopy(head, 0, request, 0, head.length);
        System.arraycopy(body, 0, request, head.length, body.length);
        out.write(request);
        out.flush();
        String status = line();
        if (!status.startsWith("HTTP/1.1 ") || status.length() < 12) {
            throw new IOException("not an HTTP/1.1 status line: " + status);
        }
        int code = Integer.parseInt(status.substring(9, 12));
        int length = -1;
        boolean close = false;
        for (String h = line(); !h.isEmpty(); h = line()) {
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
        byte[] answer = in.readNBytes(length);
        if (answer.length < length) {
            throw new IOException("answer cut short: " + answer.length + " of " + length + " bytes");
        }
        if (close) {
            close();
        }
        return new Answer(code, answer);
    }

    private String line() throws IOException {
        StringBuilder b = new StringBuilder(64);
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
