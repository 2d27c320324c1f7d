package io.tokenbucket.testsupport.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

/**
 * The test-only TLS material of {@link RedisServers#withTls}: a CA and a server certificate for {@code 127.0.0.1}
 * and {@code localhost}, committed as PEM under {@code src/main/resources/io/tokenbucket/testsupport/redis/tls/}
 * (see the README there; no {@code openssl} is needed at test time). The files are copied from the classpath into this JVM's temporary root
 * on first use, so {@code redis-server} can read them whatever the classpath is made of.
 *
 * <p>{@link #sslContext()} trusts that CA and nothing else: it is what {@link RedisHandle#command} and the readiness
 * check use against a TLS server (with host name verification), and what a test may hand to its own client. Nothing
 * here touches the JVM's default trust store or its {@code javax.net.ssl.*} system properties.
 */
public final class RedisTls {

    /** Relative to this class's package: {@code io/tokenbucket/testsupport/redis/tls/} on the classpath. */
    private static final String RESOURCES = "tls/";
    private static Path directory;
    private static SSLContext context;

    private RedisTls() {
    }

    /** @return the test CA's certificate (PEM), e.g. for Lettuce's {@code SslOptions.builder().trustManager(File)} */
    public static Path caCertificate() {
        return files().resolve("ca.crt");
    }

    /** @return the server's certificate (PEM), issued by {@link #caCertificate()} for 127.0.0.1 and localhost */
    static Path serverCertificate() {
        return files().resolve("server.crt");
    }

    /** @return the server certificate's private key (PEM, unencrypted) */
    static Path serverKey() {
        return files().resolve("server.key");
    }

    /** @return a TLS context that trusts the test CA only; no client certificate */
    public static synchronized SSLContext sslContext() {
        if (context == null) {
            try (InputStream in = Files.newInputStream(caCertificate())) {
                Certificate ca = CertificateFactory.getInstance("X.509").generateCertificate(in);
                KeyStore trusted = KeyStore.getInstance(KeyStore.getDefaultType());
                trusted.load(null, null);
                trusted.setCertificateEntry("tokenbucket-test-ca", ca);
                TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                trust.init(trusted);
                SSLContext created = SSLContext.getInstance("TLS");
                created.init(null, trust.getTrustManagers(), null);
                context = created;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } catch (GeneralSecurityException e) {
                throw new IllegalStateException("cannot load the test CA " + caCertificate(), e);
            }
        }
        return context;
    }

    /**
     * Layers TLS over a connected socket and completes the handshake, verifying the server's certificate against
     * the test CA and its host name ({@code HOST}, an IP address matched against the certificate's IP entries).
     */
    static Socket handshake(Socket connected, String host, int port) throws IOException {
        SSLSocket socket = (SSLSocket) sslContext().getSocketFactory().createSocket(connected, host, port, true);
        SSLParameters parameters = socket.getSSLParameters();
        parameters.setEndpointIdentificationAlgorithm("HTTPS");
        socket.setSSLParameters(parameters);
        socket.startHandshake();
        return socket;
    }

    private static synchronized Path files() {
        if (directory == null) {
            try {
                Path created = Files.createDirectories(RedisServers.root().resolve("tls"));
                for (String name : new String[] {"ca.crt", "server.crt", "server.key"}) {
                    try (InputStream in = RedisTls.class.getResourceAsStream(RESOURCES + name)) {
                        if (in == null) {
                            throw new IllegalStateException("test resource " + RESOURCES + name + " is missing");
                        }
                        Files.copy(in, created.resolve(name), StandardCopyOption.REPLACE_EXISTING);
                    }
                }
                directory = created;
            } catch (IOException e) {
                throw new UncheckedIOException("cannot copy the test TLS material", e);
            }
        }
        return directory;
    }
}
