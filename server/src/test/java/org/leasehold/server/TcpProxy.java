package org.leasehold.server;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy on 127.0.0.1 for fault tests: forwards to a server, and can drop every connection, refuse new ones, or
 * stall (stop reading what the server sends, as a client that stops reading).
 */
final class TcpProxy implements AutoCloseable {
    private final ServerSocket listener;
    private final int target;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile boolean refusing;
    private volatile boolean stalled;
    private volatile boolean closed;

    TcpProxy(int targetPort) throws IOException {
        this.target = targetPort;
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread t = new Thread(this::accept, "tcp-proxy");
        t.setDaemon(true);
        t.start();
    }

    String address() {
        return "127.0.0.1:" + listener.getLocalPort();
    }

    private void accept() {
        while (!closed) {
            try {
                Socket client = listener.accept();
                if (refusing) {
                    client.close();
                    continue;
                }
                Socket server = new Socket();
                server.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), target));
                sockets.add(client);
                sockets.add(server);
                pump(client, server, false);
                pump(server, client, true);
            } catch (IOException e) {
                // Closed, or the target is down: the client sees its connection fail.
            }
        }
    }

    private void pump(Socket from, Socket to, boolean fromServer) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[16 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while (true) {
                    while (fromServer && stalled && !closed && !from.isClosed()) {
                        Thread.sleep(5);
                    }
                    if ((n = in.read(buf)) < 0) {
                        break;
                    }
                    out.write(buf, 0, n);
                    out.flush();
                }
            } catch (IOException | InterruptedException e) {
                // Dropped.
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "tcp-proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    /** Closes every connection now (both sides see it broken). */
    void dropAll() {
        for (Socket s : sockets) {
            closeQuietly(s);
        }
        sockets.clear();
    }

    /** New connections are closed at once (the server looks unreachable). */
    void refuse(boolean v) {
        refusing = v;
    }

    /** Stops (or resumes) reading what the server sends. */
    void stall(boolean v) {
        stalled = v;
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // Already closed.
        }
    }

    @Override
    public void close() throws IOException {
        closed = true;
        listener.close();
        dropAll();
    }
}
