package io.tokenbucket.camel;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import io.tokenbucket.camel.producer.TokenBucketHandOff;
import io.tokenbucket.camel.producer.TokenBucketTimer;
import io.tokenbucket.camel.producer.TokenBucketWaitQueue;
import io.tokenbucket.store.local.LocalBucketStore;
import io.tokenbucket.store.redis.RedisConnections;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.ExecutorServiceManager;
import org.apache.camel.spi.ThreadPoolProfile;
import org.apache.camel.util.concurrent.ThreadPoolRejectedPolicy;

/**
 * What the endpoints of one component share, handed to each instead of the component: the local buckets of each
 * limiter name (endpoints with the same name share buckets), the Redis connections, one timer thread that wakes
 * waiting exchanges and sweeps idle buckets, the worker pool on which woken exchanges continue, and the wait queues
 * of the started endpoints, so that a release under a name wakes the waiters of every endpoint with that name.
 * {@link #start} and {@link #stop} follow the component's own start and stop.
 */
final class TokenBucketShared {

    /** How often idle (full) local buckets are dropped. */
    static final long SWEEP_INTERVAL_MILLIS = 1000;

    private final Supplier<Object> meterRegistry;
    private final Map<String, LocalBucketStore> localStores = new ConcurrentHashMap<>();
    /** The wait queues of the started endpoints. */
    private final Set<TokenBucketWaitQueue> queues = ConcurrentHashMap.newKeySet();
    /**
     * The wait queues of endpoints stopped while exchanges waited in them (a producer cache let the endpoint go, its
     * route running on): still told of releases and of the context's stop, and swept, until no exchange waits.
     */
    private final Set<TokenBucketWaitQueue> retired = ConcurrentHashMap.newKeySet();
    private RedisConnections redisConnections;
    private TokenBucketTimer timer;
    private ExecutorService timerThread;
    private ExecutorService workerPool;
    private ExecutorService ownedWorkerPool;
    private TokenBucketHandOff handOff;
    // the system's unless a test replaces them: the timer's, and the local buckets'
    private TokenBucketTimer.Clock timerClock = TokenBucketTimer.SYSTEM;
    private LongSupplier localClock = System::nanoTime;

    /** @param meterRegistry the component's {@code meterRegistry} option, read when an endpoint starts */
    TokenBucketShared(Supplier<Object> meterRegistry) {
        this.meterRegistry = meterRegistry;
    }

    /**
     * Starts the timer and the worker pool: {@code workerPool} when the application gave one (it stays the
     * application's), else a pool of Camel's named {@code TokenBucketWorker}.
     *
     * @param source     the component, which Camel names as the source of its threads
     * @param spinMicros how long before a release the timer spins instead of sleeping
     */
    void start(CamelContext camel, Object source, ExecutorService workerPool, long spinMicros) {
        // The worker pool's queue is unbounded: Camel's default profile bounds it at 1000 tasks, and ten thousand
        // waiting exchanges woken at once are ten thousand continuations. The timer keeps its own heap, on a
        // thread of Camel's so that it is named and shut down like every other.
        ExecutorServiceManager pools = camel.getExecutorServiceManager();
        timer = new TokenBucketTimer(timerClock, TimeUnit.MICROSECONDS.toNanos(spinMicros));
        timerThread = pools.newSingleThreadExecutor(source, "TokenBucketTimer");
        timerThread.execute(timer);
        this.workerPool = workerPool;
        if (workerPool == null) {
            int size = Math.max(pools.getDefaultThreadPoolProfile().getPoolSize(),
                    Runtime.getRuntime().availableProcessors());
            ownedWorkerPool = pools.newThreadPool(source, "TokenBucketWorker", unboundedProfile("TokenBucketWorker",
                    size));
            handOff = new TokenBucketHandOff(ownedWorkerPool, size);
        } else {
            ownedWorkerPool = null;
            handOff = new TokenBucketHandOff(workerPool, TokenBucketHandOff.threadsOf(workerPool));
        }
        scheduleSweep(timer);
    }

    /**
     * Stops the timer and the component's own pool, drops the local buckets and closes the Redis connections. The
     * stopped timer and pool stay until the next start: an exchange that continues after the stop (on the
     * application's pool) is refused by them ({@link RejectedExecutionException}, which fails it), not lost.
     */
    void stop(CamelContext camel) {
        if (timerThread != null) {
            timer.stop();
            camel.getExecutorServiceManager().shutdownNow(timerThread);
            timerThread = null;
        }
        if (ownedWorkerPool != null) {
            camel.getExecutorServiceManager().shutdown(ownedWorkerPool);
        }
        localStores.clear();
        closeRedisConnections();
    }

    private static ThreadPoolProfile unboundedProfile(String name, int size) {
        ThreadPoolProfile profile = new ThreadPoolProfile(name);
        profile.setPoolSize(size);
        profile.setMaxPoolSize(size);
        // unbounded in fact: Camel makes a pool whose maxQueueSize is 0 or less hand tasks straight to threads (a
        // SynchronousQueue), refusing one whenever every thread is busy
        profile.setMaxQueueSize(Integer.MAX_VALUE);
        // refused only once shut down; Camel's default CallerRuns would then drop the task silently
        profile.setRejectedPolicy(ThreadPoolRejectedPolicy.Abort);
        profile.setAllowCoreThreadTimeOut(true);
        profile.setKeepAliveTime(60L);
        profile.setTimeUnit(TimeUnit.SECONDS);
        return profile;
    }

    /**
     * Sweeps idle buckets {@link #SWEEP_INTERVAL_MILLIS} from now, and again as often until the timer stops. The
     * sweep runs on the worker pool, not the timer thread: it walks every bucket, and every release would wait for
     * it; the next is scheduled when it is done, so two never overlap.
     */
    private void scheduleSweep(TokenBucketTimer on) {
        try {
            on.schedule(() -> {
                try {
                    worker().execute(() -> {
                        try {
                            sweep();
                        } finally {
                            scheduleSweep(on);
                        }
                    });
                } catch (RejectedExecutionException stopping) {
                    // the pool is shutting down with the component: nothing left to sweep
                }
            }, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(SWEEP_INTERVAL_MILLIS));
        } catch (RejectedExecutionException e) {
            // the component is stopping: nothing left to sweep
        }
    }

    /**
     * Drops idle buckets of every limiter, and abandons the waiters whose producer and then route stopped
     * ({@link TokenBucketWaitQueue#abandonOrphans}); runs on the worker pool once a second.
     */
    void sweep() {
        localStores.values().forEach(LocalBucketStore::sweep);
        queues.forEach(TokenBucketWaitQueue::abandonOrphans);
        retired.forEach(TokenBucketWaitQueue::abandonOrphans);
        retired.removeIf(q -> q.waiting() == 0);
    }

    /**
     * Tells {@code queue}, a started endpoint's, of every release under its name and when the Camel context starts
     * stopping, until {@link #unregister}.
     */
    void register(TokenBucketWaitQueue queue) {
        retired.remove(queue);
        queues.add(queue);
    }

    /** The endpoint of {@code queue} stopped; exchanges that still wait in it keep it known until they are gone. */
    void unregister(TokenBucketWaitQueue queue) {
        queues.remove(queue);
        if (queue.waiting() > 0) {
            retired.add(queue);
        }
    }

    /** An exchange of the limiter {@code name} gave its in-flight slots back: the waiters of that name try again. */
    void slotsReleased(String name) {
        slotsReleased(queues, name);
        if (!retired.isEmpty()) {
            slotsReleased(retired, name);
        }
    }

    private static void slotsReleased(Set<TokenBucketWaitQueue> in, String name) {
        for (TokenBucketWaitQueue queue : in) { // on every release: no stream; each endpoint's queue once
            if (queue.name().equals(name)) {
                queue.drain();
            }
        }
    }

    /** The Camel context began to stop at {@code now} ({@link System#nanoTime()}): every queue bounds its waiting. */
    void stopping(long now) {
        queues.forEach(q -> q.stopping(now));
        retired.forEach(q -> q.stopping(now));
    }

    /** The local buckets of the limiter {@code name}, shared by every endpoint with that name. */
    LocalBucketStore localStore(String name) {
        return localStores.computeIfAbsent(name, n -> new LocalBucketStore(localClock));
    }

    /**
     * Tests: the timer reads and waits on {@code timer}, the local buckets read {@code local}; set before the
     * component starts. A test so moves time, or stalls the timer alone (a JVM or machine that stopped).
     */
    void useClocks(TokenBucketTimer.Clock timer, LongSupplier local) {
        this.timerClock = timer;
        this.localClock = local;
    }

    /** The local buckets of the limiter {@code name} if any were made, else null. */
    LocalBucketStore existingLocalStore(String name) {
        return localStores.get(name);
    }

    /** The Redis connections of the component's endpoints, created when the first Redis endpoint starts. */
    synchronized RedisConnections redisConnections() {
        if (redisConnections == null) {
            redisConnections = new RedisConnections();
        }
        return redisConnections;
    }

    private synchronized void closeRedisConnections() {
        if (redisConnections != null) {
            redisConnections.close();
            redisConnections = null;
        }
    }

    /** The timer that wakes waiting exchanges (and sweeps); it only hands them to {@link #worker()}. */
    TokenBucketTimer timer() {
        return timer;
    }

    /** Where exchanges continue after waiting: the worker pool, in batches, or their waiting caller. */
    TokenBucketHandOff handOff() {
        return handOff;
    }

    /** The pool on which exchanges continue after waiting. */
    ExecutorService worker() {
        return workerPool != null ? workerPool : ownedWorkerPool;
    }

    /** The Micrometer registry the component was given for the meters, or null to look one up. */
    Object meterRegistry() {
        return meterRegistry.get();
    }
}
