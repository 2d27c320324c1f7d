package io.tokenbucket.benchmarks;

/**
 * The options of {@code java -jar benchmarks.jar targets} ({@link Targets}), with their defaults.
 *
 * @param seconds measured seconds of each Redis run (default 5)
 * @param warmup warm-up seconds before them, unrecorded (default 2)
 * @param rounds rounds of the Redis cases, peers alternating (default 3)
 * @param keys how many random keys (default 1,000)
 * @param forks JMH forks of the route step (default 3)
 * @param route whether the route step runs ({@code --no-route}: not)
 * @param accuracy whether the release lateness runs ({@code --no-accuracy}: not)
 * @param accuracySeconds seconds of each release-lateness run (10; no option)
 * @param options endpoint options appended to ours in the Redis runs ({@code &name=value...}; default none)
 * @param only keeps the Redis cases whose name contains this text (default: all)
 */
record TargetSettings(double seconds, double warmup, int rounds, int keys, int forks, boolean route, boolean accuracy,
                      int accuracySeconds, String options, String only) {

    /** Reads the command line; an unknown argument is an error that names it and shows the usage. */
    static TargetSettings parse(String[] args) {
        double seconds = 5;
        double warmup = 2;
        int rounds = 3;
        int keys = 1000;
        int forks = 3;
        boolean route = true;
        boolean accuracy = true;
        String options = "";
        String only = "";
        for (int a = 0; a < args.length; a++) {
            switch (args[a]) {
                case "--seconds" -> seconds = Double.parseDouble(args[++a]);
                case "--warmup" -> warmup = Double.parseDouble(args[++a]);
                case "--rounds" -> rounds = Integer.parseInt(args[++a]);
                case "--keys" -> keys = Integer.parseInt(args[++a]);
                case "--forks" -> forks = Integer.parseInt(args[++a]);
                case "--no-route" -> route = false;
                case "--no-accuracy" -> accuracy = false;
                case "--options" -> options = args[++a];
                case "--only" -> only = args[++a];
                default -> throw new IllegalArgumentException("unknown argument " + args[a]
                        + "; usage: targets [--seconds 5] [--warmup 2] [--rounds 3] [--keys 1000] [--forks 3]"
                        + " [--no-route] [--no-accuracy] [--options '&name=value...']"
                        + " [--only 'part of a case name']");
            }
        }
        return new TargetSettings(seconds, warmup, rounds, keys, forks, route, accuracy, 10, options, only);
    }
}
