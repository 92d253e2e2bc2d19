package org.leasehold.audit;

import java.util.Base64;

/** PEM armour: one base64 block between BEGIN and END lines (RFC 7468). */
final class Pem {

    private Pem() {
    }

    static String encode(byte[] der, String label) {
        return "-----BEGIN " + label + "-----\n" + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
                + "\n-----END " + label + "-----\n";
    }

    static byte[] decode(String pem, String label) throws AuditFormatException {
        String begin = "-----BEGIN " + label + "-----";
        String end = "-----END " + label + "-----";
        int b = pem == null ? -1 : pem.indexOf(begin);
        int e = b < 0 ? -1 : pem.indexOf(end, b);
        if (b < 0 || e < 0) {
            throw new AuditFormatException("no PEM block '" + label + "' found (expected a line '" + begin + "')");
        }
        try {
            return Base64.getMimeDecoder().decode(pem.substring(b + begin.length(), e));
        } catch (IllegalArgumentException ex) {
            throw new AuditFormatException("the PEM block '" + label + "' is not base64: " + ex.getMessage(), ex);
        }
    }
}
