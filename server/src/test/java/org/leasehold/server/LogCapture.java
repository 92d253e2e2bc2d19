package org.leasehold.server;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * The records a logger (a class's {@code System.Logger}, which the JDK backs with {@code java.util.logging}) publishes
 * while it is open: {@code try (LogCapture logs = LogCapture.of(EngineHolder.class)) { ...; logs.records() }}.
 */
final class LogCapture extends Handler implements AutoCloseable {
    private final Logger logger;
    private final List<LogRecord> records = new CopyOnWriteArrayList<>();

    private LogCapture(Logger logger) {
        this.logger = logger;
        logger.addHandler(this);
    }

    /** Captures what the logger of {@code type} publishes until closed. */
    static LogCapture of(Class<?> type) {
        return of(type.getName());
    }

    /** Captures what the logger named {@code name} publishes until closed. */
    static LogCapture of(String name) {
        return new LogCapture(Logger.getLogger(name));
    }

    /** What was published so far, in order (a live view). */
    List<LogRecord> records() {
        return records;
    }

    @Override
    public void publish(LogRecord r) {
        records.add(r);
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
        logger.removeHandler(this);
    }
}
