package org.leasehold.etcd;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertPathBuilderException;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.util.Locale;
import java.util.concurrent.TimeoutException;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;

/**
 * What a failed etcd call means when the cause is the service's own settings rather than etcd being away: a wrong
 * user or password, a role that does not cover the key prefix, members whose certificates the service does not
 * trust. Such failures do not pass by retrying, so the message names the setting to fix instead of a lost quorum.
 */
final class EtcdFailures {
    private static final int PROBE_MILLIS = 1_000;

    private EtcdFailures() {
    }

    /** The explanation of {@code failure} (a call of the service {@code config} describes), or null if etcd was away. */
    static String explain(EtcdConfig config, String what, Throwable failure) {
        if (failure instanceof TimeoutException) {
            return probeTls(config, what);
        }
        String at = "etcd at " + config.endpoints();
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            String message = String.valueOf(t.getMessage());
            String m = message.toLowerCase(Locale.ROOT);
            if (m.contains("authentication failed") || m.contains("invalid user id or password")) {
                return at + " refused to authenticate user '" + config.user() + "' for the " + what + " (" + message
                        + "): the user or its password is wrong; give an etcd user and its password (options user= "
                        + "and password=)";
            }
            if (m.contains("user name is empty") || m.contains("invalid auth token")) {
                return at + " requires authentication and the service gave " + (config.user() == null ? "no user"
                        : "user '" + config.user() + "', which it did not accept,") + " for the " + what + " ("
                        + message + "): give an etcd user and its password (options user= and password=) whose role "
                        + "may read and write the prefix '" + config.prefix() + "'";
            }
            if (m.contains("permission denied")) {
                return at + " denied " + (config.user() == null ? "this client" : "user '" + config.user() + "'")
                        + " the " + what + " under the key prefix '" + config.prefix() + "' (" + message
                        + "): grant the user's role read and write on the prefix (etcdctl role grant-permission "
                        + "<role> readwrite --prefix=true " + config.prefix() + "), or give a prefix= the role covers";
            }
            if (t instanceof CertPathBuilderException || t instanceof CertificateException || m.contains("pkix path")
                    || m.contains("unable to find valid certification path") || m.contains("subject alternative")) {
                return "the TLS handshake with " + at + " failed for the " + what + " (" + message + "): the service "
                        + "does not trust the members' certificates (" + (config.trustCertificates() == null
                                ? "the JVM's trust store" : "trust=" + config.trustCertificates())
                        + "); give trust= the PEM file of the authority that signs them, and certificates that name "
                        + "the address the service uses (" + config.endpoints().get(0).getHost() + ")";
            }
        }
        return null;
    }

    /**
     * After a call got no answer over TLS: jetcd waits for a usable connection until the call's time is up, so a
     * certificate the service does not trust shows only as silence. One TLS handshake with the first member, with the
     * service's trust settings and a bound of {@value #PROBE_MILLIS} ms, tells that case apart (null otherwise).
     */
    private static String probeTls(EtcdConfig config, String what) {
        URI first = config.endpoints().isEmpty() ? null : config.endpoints().get(0);
        if (first == null || !"https".equalsIgnoreCase(first.getScheme())) {
            return null;
        }
        try (Socket plain = new Socket()) {
            plain.connect(new InetSocketAddress(first.getHost(), first.getPort()), PROBE_MILLIS);
            plain.setSoTimeout(PROBE_MILLIS);
            SSLContext tls = SSLContext.getInstance("TLS");
            tls.init(null, trustManagers(config), null);
            try (SSLSocket s = (SSLSocket) tls.getSocketFactory().createSocket(plain, first.getHost(), first.getPort(),
                    false)) {
                SSLParameters p = s.getSSLParameters();
                p.setEndpointIdentificationAlgorithm("HTTPS");
                s.setSSLParameters(p);
                s.startHandshake();
            }
            return null;
        } catch (SSLHandshakeException e) {
            return explain(config, what, e);
        } catch (IOException | GeneralSecurityException | RuntimeException e) {
            return null;
        }
    }

    private static TrustManager[] trustManagers(EtcdConfig config) throws IOException, GeneralSecurityException {
        TrustManagerFactory f = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        if (config.trustCertificates() == null) {
            f.init((KeyStore) null);
            return f.getTrustManagers();
        }
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        try (InputStream in = Files.newInputStream(config.trustCertificates())) {
            int i = 0;
            for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                store.setCertificateEntry("trusted-" + i++, c);
            }
        }
        f.init(store);
        return f.getTrustManagers();
    }
}
