package org.leasehold.audit;

/** What a lease service did when it wrote a {@link Witness}. Its code is the byte the encoding stores. */
public enum WitnessEvent {
    /** A new lease on the name. */
    GRANT(1),
    /** The holder moved its deadline. */
    RENEWAL(2),
    /** A tentative lease became a full one. */
    UPGRADE(3),
    /** A lease of a transaction in doubt taken up again after a restart (same generation and correlation id). */
    REINSTATEMENT(4);

    private final int code;

    WitnessEvent(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    static WitnessEvent ofCode(int code) throws AuditFormatException {
        for (WitnessEvent e : values()) {
            if (e.code == code) {
                return e;
            }
        }
        throw new AuditFormatException("unknown witness event code " + code + " (known: 1 to 4)");
    }
}
