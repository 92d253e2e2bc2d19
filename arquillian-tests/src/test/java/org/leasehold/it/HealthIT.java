package org.leasehold.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.arquillian.container.test.api.RunAsClient;
import org.jboss.arquillian.junit5.ArquillianExtension;
import org.jboss.arquillian.test.api.ArquillianResource;
import org.jboss.shrinkwrap.api.asset.StringAsset;
import org.jboss.shrinkwrap.api.spec.WebArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.leasehold.connector.LeaseConnectionFactory;

/**
 * The adapter's MicroProfile Health checks on Payara Micro ({@code /health/...} on the HTTP port) and WildFly (on the
 * management port, with the microprofile-health-smallrye subsystem), asked over HTTP as a probe asks them. The
 * application defines its connection factory on a store root of its own and leaves its Log unset: its
 * {@code microprofile-config.properties} supplies it ({@code leasehold.Log}), and the checks report that log.
 */
@ExtendWith(ArquillianExtension.class)
@RunAsClient
class HealthIT {
    private static final String LOG = "health-mp";
    private static final String WRITER = "it-health";
    /** How long a server may take to see a change: the adapter reuses a probe's result for a second. */
    private static final Duration SETTLE = Duration.ofSeconds(30);

    @ArquillianResource
    private URL app;

    @Deployment
    static WebArchive app() {
        return Deployments.war("adapter-health.war")
                .addAsLibraries(Deployments.microFile("leasehold-cdi.jar"))
                .addAsResource(new StringAsset("leasehold.Log=" + LOG + "\n"), "META-INF/microprofile-config.properties")
                .setWebXML(new StringAsset(webXml()));
    }

    /** The store root of this server's run of the test, which the test makes refuse writes. */
    private static Path root() {
        String dir = System.getProperty("leasehold.it.health");
        if (dir == null) {
            throw new IllegalStateException("the system property leasehold.it.health is not set: run the tests through "
                    + "Maven (failsafe passes it)");
        }
        return Path.of(dir, Deployments.server());
    }

    private static String webXml() {
        return "<web-app xmlns=\"https://jakarta.ee/xml/ns/jakartaee\" version=\"6.0\">\n"
                + "  <connection-factory>\n"
                + "    <name>" + LeaseConnectionFactory.DEFAULT_JNDI_NAME + "</name>\n"
                + "    <interface-name>" + LeaseConnectionFactory.class.getName() + "</interface-name>\n"
                + "    <resource-adapter>leasehold</resource-adapter>\n"
                + "    <transaction-support>XATransaction</transaction-support>\n"
                + "    <property><name>BagStoreRoot</name><value>" + root() + "</value></property>\n"
                + "    <property><name>WriterId</name><value>" + WRITER + "</value></property>\n"
                + "  </connection-factory>\n"
                + "</web-app>\n";
    }

    /** A health endpoint's answer: the HTTP status and the body. */
    private record Answer(int code, String body) {
        /** The status of the check named {@code leasehold}, or null when the answer has none. */
        String leasehold() {
            String object = checkObject();
            if (object == null) {
                return null;
            }
            Matcher m = Pattern.compile("\"status\"\\s*:\\s*\"(UP|DOWN)\"").matcher(object);
            int depth = 0;
            // The check's own status is the one at the object's top level, not inside its data.
            while (m.find()) {
                depth = depthAt(object, m.start());
                if (depth == 1) {
                    return m.group(1);
                }
            }
            return null;
        }

        /** The JSON object of the check named {@code leasehold}. */
        String checkObject() {
            Matcher m = Pattern.compile("\"name\"\\s*:\\s*\"leasehold\"").matcher(body);
            if (!m.find()) {
                return null;
            }
            int start = body.lastIndexOf('{', m.start());
            int depth = 0;
            boolean inString = false;
            for (int i = start; i < body.length(); i++) {
                char c = body.charAt(i);
                if (inString) {
                    if (c == '\\') {
                        i++;
                    } else if (c == '"') {
                        inString = false;
                    }
                } else if (c == '"') {
                    inString = true;
                } else if (c == '{') {
                    depth++;
                } else if (c == '}' && --depth == 0) {
                    return body.substring(start, i + 1);
                }
            }
            return null;
        }

        private static int depthAt(String json, int index) {
            int depth = 0;
            boolean inString = false;
            for (int i = 0; i < index; i++) {
                char c = json.charAt(i);
                if (inString) {
                    if (c == '\\') {
                        i++;
                    } else if (c == '"') {
                        inString = false;
                    }
                } else if (c == '"') {
                    inString = true;
                } else if (c == '{') {
                    depth++;
                } else if (c == '}') {
                    depth--;
                }
            }
            return depth;
        }
    }

    private URI health(String kind) {
        if (Deployments.onWildFly()) {
            return URI.create("http://127.0.0.1:" + System.getProperty("wildfly.management.port") + "/health/" + kind);
        }
        return URI.create("http://" + app.getHost() + ":" + app.getPort() + "/health/" + kind);
    }

    private Answer ask(String kind) throws IOException {
        HttpURLConnection c = (HttpURLConnection) health(kind).toURL().openConnection();
        c.setConnectTimeout(10_000);
        c.setReadTimeout(30_000);
        int code = c.getResponseCode();
        try (InputStream in = code >= 400 ? c.getErrorStream() : c.getInputStream()) {
            return new Answer(code, in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } finally {
            c.disconnect();
        }
    }

    /** Asks until the leasehold check has {@code status} (the server's clock, not the test's, decides when). */
    private Answer await(String kind, String status) throws Exception {
        long deadline = System.nanoTime() + SETTLE.toNanos();
        Answer a = ask(kind);
        while (!status.equals(a.leasehold()) && System.nanoTime() < deadline) {
            Thread.sleep(200);
            a = ask(kind);
        }
        return a;
    }

    /** Makes {@code dir} a regular file: nothing can be created in it any more, whatever the user's rights. */
    private static void replaceWithFile(Path dir) throws IOException {
        if (Files.isDirectory(dir)) {
            try (var files = Files.list(dir)) {
                for (Path f : files.toList()) {
                    Files.delete(f);
                }
            }
            Files.delete(dir);
        }
        Files.writeString(dir, "not a directory");
    }

    @Test
    void aWorkingAdapterIsReadyAndLiveAndReportsTheLogMicroProfileConfigGaveIt() throws Exception {
        Answer ready = await("ready", "UP");
        assertEquals(200, ready.code(), ready.body());
        assertEquals("UP", ready.leasehold(), ready.body());
        String check = ready.checkObject();
        assertTrue(check.matches("(?s).*\"log\"\\s*:\\s*\"" + LOG + "\".*"), "leasehold.Log from the application's "
                + "MicroProfile Config names the log: " + check);
        assertTrue(check.matches("(?s).*\"writer\"\\s*:\\s*\"" + WRITER + "\".*"), check);
        assertTrue(check.matches("(?s).*\"store\"\\s*:\\s*\"UP: writable: .*"), check);
        assertTrue(Files.isRegularFile(root().resolve(".leasehold/health/" + WRITER)), "the probe file");
        assertTrue(Files.isDirectory(root().resolve(".leasehold/owners/" + LOG)), "the adapter serves log " + LOG);

        Answer live = ask("live");
        assertEquals(200, live.code(), live.body());
        assertEquals("UP", live.leasehold(), live.body());
    }

    @Test
    void aStoreThatRefusesWritesMakesTheAdapterNotReadyButLiveUntilItAcceptsThemAgain() throws Exception {
        assertEquals("UP", await("ready", "UP").leasehold(), "ready before");
        Path health = root().resolve(".leasehold/health");
        try {
            replaceWithFile(health);
            Answer down = await("ready", "DOWN");
            assertEquals(503, down.code(), down.body());
            assertEquals("DOWN", down.leasehold(), down.body());
            assertTrue(down.checkObject().matches("(?s).*\"store\"\\s*:\\s*\"DOWN: the bag store at .* does not accept "
                    + "writes: writing .*"), down.checkObject());
            Answer live = ask("live");
            assertEquals(200, live.code(), "not ready is not dead: " + live.body());
            assertEquals("UP", live.leasehold(), live.body());
        } finally {
            Files.deleteIfExists(health);
        }
        Answer again = await("ready", "UP");
        assertEquals(200, again.code(), again.body());
    }
}
