package org.leasehold.peers;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The floor of one blocking round trip to a JVM server on this machine: a server socket on 127.0.0.1 in the harness's
 * JVM answers each 16-byte request with its bytes, on a thread per connection; each caller thread has its own
 * connection and writes and reads it itself, as Jedis does. "acquire" and "release" are one round trip each. It takes
 * no lock: it is the least any Java lock server reached over TCP could take per call, with no work and no hand-off.
 */
final class JavaSocketEchoClient implements LockClient<String> {
    private static final int SIZE = 16;

    private final ServerSocket server;
    private final Thread acceptor;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final ThreadLocal<Socket> mine = new ThreadLocal<>();

    JavaSocketEchoClient() throws IOException {
        server = new ServerSocket(0, 128, InetAddress.getLoopbackAddress());
        acceptor = new Thread(this::accept, "socket-echo-acceptor");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket s = server.accept();
                s.setTcpNoDelay(true);
                sockets.add(s);
                Thread t = new Thread(() -> echo(s), "socket-echo-server");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    private static void echo(Socket s) {
        byte[] b = new byte[SIZE];
        try (s) {
            DataInputStream in = new DataInputStream(s.getInputStream());
            OutputStream out = s.getOutputStream();
            while (true) {
                in.readFully(b);
                out.write(b);
            }
        } catch (IOException e) {
            // The connection closed: done.
        }
    }

    @Override
    public String system() {
        return "java-socket-echo";
    }

    @Override
    public String acquire(String name) throws Exception {
        call(name);
        return name;
    }

    @Override
    public void release(String name) throws Exception {
        call(name);
    }

    private void call(String name) throws IOException {
        Socket s = mine.get();
        if (s == null) {
            s = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
            s.setTcpNoDelay(true);
            sockets.add(s);
            mine.set(s);
        }
        byte[] request = new byte[SIZE];
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        System.arraycopy(n, 0, request, 0, Math.min(n.length, SIZE));
        OutputStream out = s.getOutputStream();
        out.write(request);
        InputStream in = s.getInputStream();
        byte[] answer = new byte[SIZE];
        new DataInputStream(in).readFully(answer);
        if (!java.util.Arrays.equals(request, answer)) {
            throw new IllegalStateException("the echo answered other bytes than were sent");
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
        for (Socket s : sockets) {
            s.close();
        }
    }
}
