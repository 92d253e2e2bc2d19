package org.leasehold.server;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

/**
 * The operator's HTTP endpoint: {@code /metrics} (Prometheus text format), {@code /keys} (the public signing keys,
 * JSON), {@code /health} (liveness: 200 while the
 * process serves) and {@code /ready} (readiness: 200 while the engine grants; 503 during its quiet period, while its
 * clock is behind the time mark, while the time mark cannot be recorded, and while shutting down). Health answers are
 * JSON.
 */
final class HttpEndpoint implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpServer server;
    private final ExecutorService executor;

    /** What the health answers report. */
    interface Status {
        Map<String, Object> health();

        boolean ready();

        /** The public keys the server signs with ({@code GET /keys}). */
        Map<String, Object> keys();
    }

    HttpEndpoint(InetSocketAddress address, ServerMetrics metrics, Status status) throws IOException {
        server = HttpServer.create(address, 16);
        executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "leasehold-http");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        server.createContext("/metrics", ex -> {
            if (!get(ex)) {
                return;
            }
            send(ex, 200, metrics.contentType(), metrics.scrape());
        });
        server.createContext("/health", ex -> {
            if (!get(ex)) {
                return;
            }
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("status", "UP");
            body.putAll(status.health());
            send(ex, 200, "application/json", JSON.writeValueAsBytes(body));
        });
        server.createContext("/ready", ex -> {
            if (!get(ex)) {
                return;
            }
            boolean ready = status.ready();
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("status", ready ? "READY" : "NOT_READY");
            body.putAll(status.health());
            send(ex, ready ? 200 : 503, "application/json", JSON.writeValueAsBytes(body));
        });
        server.createContext("/keys", ex -> {
            if (!get(ex)) {
                return;
            }
            send(ex, 200, "application/json", JSON.writeValueAsBytes(status.keys()));
        });
        server.createContext("/", ex -> send(ex, 404, "text/plain; charset=utf-8",
                ("no such endpoint: " + ex.getRequestURI().getPath() + "; try /metrics, /health, /ready or /keys\n")
                        .getBytes(StandardCharsets.UTF_8)));
        server.start();
    }

    private static boolean get(HttpExchange ex) throws IOException {
        if (ex.getRequestMethod().equals("GET") || ex.getRequestMethod().equals("HEAD")) {
            return true;
        }
        ex.getResponseHeaders().add("Allow", "GET, HEAD");
        send(ex, 405, "text/plain; charset=utf-8", "use GET\n".getBytes(StandardCharsets.UTF_8));
        return false;
    }

    private static void send(HttpExchange ex, int code, String type, byte[] body) throws IOException {
        ex.getResponseHeaders().add("Content-Type", type);
        boolean head = ex.getRequestMethod().equals("HEAD");
        ex.sendResponseHeaders(code, head ? -1 : body.length);
        if (!head) {
            try (OutputStream out = ex.getResponseBody()) {
                out.write(body);
            }
        }
        ex.close();
    }

    int port() {
        return server.getAddress().getPort();
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
