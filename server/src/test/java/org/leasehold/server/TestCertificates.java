package org.leasehold.server;

import java.io.IOException;
import java.io.StringWriter;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.concurrent.atomic.AtomicLong;

import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;
import org.bouncycastle.operator.ContentSigner;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.leasehold.time.Micros;
import org.leasehold.time.SystemTimeSource;

/**
 * Certificates made at test time with BouncyCastle: a certificate authority, server certificates for 127.0.0.1 and
 * {@code localhost}, and client certificates whose common name is the principal. Everything is written as PEM
 * (certificates, and keys as unencrypted PKCS#8) into a directory under {@code target/}.
 */
final class TestCertificates {
    private static final AtomicLong SERIAL = new AtomicLong(System.nanoTime());
    private static final SecureRandom RANDOM = new SecureRandom();

    /** A certificate, its key and where both were written. */
    record Issued(X509Certificate certificate, KeyPair keys, Path certFile, Path keyFile) {
    }

    private TestCertificates() {
    }

    /** A self-signed certificate authority named {@code name}. */
    static Issued authority(Path dir, String name) throws Exception {
        KeyPair keys = keyPair();
        X500Name subject = new X500Name("CN=" + name);
        X509v3CertificateBuilder b = builder(subject, subject, keys);
        JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
        b.addExtension(Extension.basicConstraints, true, new BasicConstraints(0));
        b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
        b.addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(keys.getPublic()));
        return write(dir, name, sign(b, keys), keys);
    }

    /** A server certificate for 127.0.0.1 and localhost, signed by {@code ca}. */
    static Issued server(Path dir, String name, Issued ca) throws Exception {
        KeyPair keys = keyPair();
        X509v3CertificateBuilder b = leaf(name, ca, keys, KeyPurposeId.id_kp_serverAuth);
        b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(new GeneralName[] {
            new GeneralName(GeneralName.iPAddress, "127.0.0.1"), new GeneralName(GeneralName.dNSName, "localhost")}));
        return write(dir, name, sign(b, ca.keys), keys);
    }

    /** A client certificate with common name {@code principal}, signed by {@code ca}. */
    static Issued client(Path dir, String principal, Issued ca) throws Exception {
        KeyPair keys = keyPair();
        return write(dir, "client-" + principal + "-" + ca.certificate.getSubjectX500Principal().getName().replace("CN=", ""),
                sign(leaf(principal, ca, keys, KeyPurposeId.id_kp_clientAuth), ca.keys), keys);
    }

    /** A self-signed certificate whose subject is {@code subject} (an X.500 name, e.g. {@code O=Acme,C=DE}). */
    static X509Certificate selfSigned(String subject) throws Exception {
        KeyPair keys = keyPair();
        X500Name name = new X500Name(subject);
        return sign(builder(name, name, keys), keys);
    }

    private static X509v3CertificateBuilder leaf(String cn, Issued ca, KeyPair keys, KeyPurposeId purpose) throws Exception {
        X509v3CertificateBuilder b = builder(X500Name.getInstance(ca.certificate.getSubjectX500Principal().getEncoded()),
                new X500Name("CN=" + cn), keys);
        JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
        b.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
        b.addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyEncipherment));
        b.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(purpose));
        b.addExtension(Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(ca.certificate));
        return b;
    }

    private static X509v3CertificateBuilder builder(X500Name issuer, X500Name subject, KeyPair keys) {
        // Valid around the machine's time (the TLS stacks check validity against it), read through the time source.
        Instant now;
        try (SystemTimeSource time = new SystemTimeSource("test-certificates")) {
            now = Micros.toInstant(time.nowMicros());
        }
        return new JcaX509v3CertificateBuilder(issuer, BigInteger.valueOf(SERIAL.incrementAndGet()),
                Date.from(now.minus(Duration.ofHours(1))), Date.from(now.plus(Duration.ofDays(1))), subject,
                keys.getPublic());
    }

    private static KeyPair keyPair() throws GeneralSecurityException {
        KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
        g.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
        return g.generateKeyPair();
    }

    private static X509Certificate sign(X509v3CertificateBuilder b, KeyPair issuer)
            throws OperatorCreationException, GeneralSecurityException {
        ContentSigner signer = new JcaContentSignerBuilder("SHA256withECDSA").build(issuer.getPrivate());
        return new JcaX509CertificateConverter().getCertificate(b.build(signer));
    }

    private static Issued write(Path dir, String name, X509Certificate cert, KeyPair keys) throws IOException {
        Files.createDirectories(dir);
        Path certFile = dir.resolve(name + ".pem");
        Path keyFile = dir.resolve(name + "-key.pem");
        Files.writeString(certFile, pem(cert));
        Files.writeString(keyFile, pem(new JcaPKCS8Generator(keys.getPrivate(), null)));
        return new Issued(cert, keys, certFile, keyFile);
    }

    private static String pem(Object o) throws IOException {
        StringWriter s = new StringWriter();
        try (JcaPEMWriter w = new JcaPEMWriter(s)) {
            w.writeObject(o instanceof JcaPKCS8Generator g ? g.generate() : o);
        }
        return s.toString();
    }
}
