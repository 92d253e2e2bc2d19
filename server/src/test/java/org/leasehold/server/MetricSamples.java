package org.leasehold.server;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

/** Reads samples of an in-process lease server's Prometheus exposition ({@code GET /metrics}) for tests. */
final class MetricSamples {
    private MetricSamples() {
    }

    /** The value of the sample {@code name} (no labels) that {@code server} exposes now; fails if it is absent. */
    static double sample(LeaseServer server, String name) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                + server.httpPort() + "/metrics")).build(), HttpResponse.BodyHandlers.ofString());
        return sample(r.body(), name);
    }

    /** The value of the sample {@code name} (no labels) in a Prometheus text exposition; fails if it is absent. */
    static double sample(String body, String name) {
        for (String line : body.split("\n")) {
            if (line.startsWith(name + " ")) {
                return Double.parseDouble(line.substring(name.length() + 1).trim());
            }
        }
        throw new AssertionError("no sample " + name + " in\n" + body);
    }
}
