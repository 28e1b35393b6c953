package io.qgpu.cli;

/** Bad command-line usage; the tool prints the message and the usage text and exits with 2. */
final class UsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
        super(message);
    }
}
