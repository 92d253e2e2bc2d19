package org.leasehold.etcd;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP relay on 127.0.0.1 (a port chosen at run time) to one etcd member, that a test can cut and heal: the network
 * between one client and etcd. {@link #cut} closes every relayed connection and, until {@link #heal}, closes each new
 * one as soon as it is accepted, so the client behind the relay sees etcd vanish while other clients, connected
 * directly, go on; {@link #drop} closes the relayed connections once (a blip).
 */
final class TcpProxy implements AutoCloseable {
    private final ServerSocket server;
    private final InetSocketAddress target;
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private final Thread acceptor;
    private volatile boolean cut;
    private volatile boolean closed;

    /** Relays to the member at {@code target} (its client URL). */
    TcpProxy(URI target) throws IOException {
        this.target = new InetSocketAddress(target.getHost(), target.getPort());
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.acceptor = new Thread(this::accept, "tcp-proxy-" + server.getLocalPort());
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** The URL clients behind the relay use. */
    URI endpoint() {
        return URI.create("http://127.0.0.1:" + server.getLocalPort());
    }

    /** Cuts the client off: every relayed connection is closed, and new ones are closed at once. */
    void cut() {
        cut = true;
        for (Socket s : open) {
            closeQuietly(s);
        }
    }

    /** Closes every relayed connection once and goes on relaying new ones: a blip the client reconnects after. */
    void drop() {
        for (Socket s : open) {
            closeQuietly(s);
        }
    }

    /** Lets connections through again (the client reconnects on its own). */
    void heal() {
        cut = false;
    }

    private void accept() {
        while (!closed) {
            Socket client;
            try {
                client = server.accept();
            } catch (IOException e) {
                return; // closed
            }
            if (cut) {
                closeQuietly(client);
                continue;
            }
            Socket upstream = new Socket();
            try {
                upstream.connect(target, 5_000);
            } catch (IOException e) {
                closeQuietly(client);
                closeQuietly(upstream);
                continue;
            }
            open.add(client);
            open.add(upstream);
            pump(client, upstream);
            pump(upstream, client);
        }
    }

    private void pump(Socket from, Socket to) {
        Thread t = new Thread(() -> {
            byte[] buffer = new byte[16 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                for (int n; (n = in.read(buffer)) >= 0;) {
                    out.write(buffer, 0, n);
                    out.flush();
                }
            } catch (IOException e) {
                // one side closed or was cut: end both
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "tcp-proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    private void closeQuietly(Socket s) {
        open.remove(s);
        try {
            s.close();
        } catch (IOException e) {
            // already closed
        }
    }

    @Override
    public void close() {
        closed = true;
        cut();
        try {
            server.close();
        } catch (IOException e) {
            // already closed
        }
    }
}
