package io.tokenbucket.testsupport.random;

import java.util.Random;

/**
 * The one convention of the randomised tests: each has a fixed default seed, so that a build is repeatable, prints the
 * seed it runs with, and takes another from the system property {@value #PROPERTY}: a number reruns that seed, {@code
 * random} draws a new one, the same for every test of the JVM (printed, so a failure can be rerun with it). For example
 * {@code mvn -pl camel-tokenbucket test -Dtest=BucketScriptBatchDifferentialTest -Dtokenbucket.seed=42}. The property
 * applies to every randomised test of the run.
 */
public final class TestSeed {

    /** System property with the seed for every randomised test of the run: a number, or {@code random}. */
    public static final String PROPERTY = "tokenbucket.seed";

    /** The seed {@code random} drew: one per JVM, so that one number reruns every test of the run. */
    private static final long DRAWN = new Random().nextLong();

    private TestSeed() {
    }

    /**
     * The seed {@code test} runs with: {@value #PROPERTY} when set, else {@code defaultSeed}. Prints
     * {@code "<test>: seed <n> (rerun: -Dtokenbucket.seed=<n>)"} on standard output.
     *
     * @param test        what is seeded, for the printed line (e.g. the test class and method)
     * @param defaultSeed the seed when the property is not set
     * @return the seed
     * @throws IllegalArgumentException when the property is neither a number nor {@code random}
     */
    public static long seed(String test, long defaultSeed) {
        String configured = System.getProperty(PROPERTY, "").strip();
        long seed;
        if (configured.isEmpty()) {
            seed = defaultSeed;
        } else if (configured.equalsIgnoreCase("random")) {
            seed = DRAWN;
        } else {
            try {
                seed = Long.parseLong(configured);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("-D" + PROPERTY + " must be a number or 'random', was '"
                        + configured + "'", e);
            }
        }
        System.out.printf("%s: seed %d (rerun: -D%s=%d)%n", test, seed, PROPERTY, seed);
        return seed;
    }

    /**
     * A {@link Random} on {@link #seed(String, long)}.
     *
     * @param test        what is seeded, for the printed line
     * @param defaultSeed the seed when the property is not set
     * @return a new generator
     */
    public static Random random(String test, long defaultSeed) {
        return new Random(seed(test, defaultSeed));
    }
}
