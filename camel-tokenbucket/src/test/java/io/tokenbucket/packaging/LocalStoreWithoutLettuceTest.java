package io.tokenbucket.packaging;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import org.apache.camel.CamelContext;
import org.apache.camel.CamelExecutionException;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

/**
 * Lettuce is a normal dependency of the component, and an application that keeps its buckets local may exclude it:
 * a route with {@code store=local} starts, admits and rejects in a class loader that has this module's classes and
 * every test dependency except {@code lettuce-core}, so nothing on the local path loads a Lettuce class. A
 * {@code store=redis} endpoint there fails with the component's message naming the dependency.
 */
class LocalStoreWithoutLettuceTest {

    @Test
    void aLocalRouteRunsWithoutLettuceOnTheClassPath() throws Exception {
        try (URLClassLoader withoutLettuce = classPathWithout("lettuce-core")) {
            assertThat(withoutLettuce.getResource("io/lettuce/core/RedisClient.class")).isNull();
            @SuppressWarnings("unchecked")
            Callable<List<String>> route = (Callable<List<String>>) withoutLettuce
                    .loadClass(LocalRoute.class.getName()).getDeclaredConstructor().newInstance();
            // Camel finds its services through the thread's context class loader
            Thread thread = Thread.currentThread();
            ClassLoader previous = thread.getContextClassLoader();
            List<String> outcomes;
            thread.setContextClassLoader(withoutLettuce);
            try {
                outcomes = route.call();
            } finally {
                thread.setContextClassLoader(previous);
            }
            assertThat(outcomes).containsExactly("admitted", "admitted", "rejected",
                    "store=redis: store=redis needs Lettuce on the classpath: add the dependency"
                            + " io.lettuce:lettuce-core");
        }
    }

    /** This JVM's class path minus the jars whose file name starts with {@code artifact}; parent: the platform's. */
    private static URLClassLoader classPathWithout(String artifact) throws MalformedURLException {
        List<URL> urls = new ArrayList<>();
        int dropped = 0;
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            File file = new File(entry);
            if (file.getName().startsWith(artifact)) {
                dropped++;
                continue;
            }
            urls.add(file.toURI().toURL());
        }
        assertThat(dropped).as(artifact + " jars on the test class path").isEqualTo(1);
        return new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
    }

    /** Runs in the class loader without Lettuce: three exchanges through a capacity-2 reject route, then Redis. */
    public static final class LocalRoute implements Callable<List<String>> {

        @Override
        public List<String> call() throws Exception {
            List<String> outcomes = new ArrayList<>();
            try (CamelContext camel = new DefaultCamelContext()) {
                camel.addRoutes(new RouteBuilder() {
                    @Override
                    public void configure() {
                        errorHandler(noErrorHandler());
                        from("direct:local").to("tokenbucket:local?capacity=2&refillPeriod=1h&mode=reject");
                    }
                });
                camel.start();
                ProducerTemplate producer = camel.createProducerTemplate();
                for (int i = 0; i < 3; i++) {
                    try {
                        producer.sendBody("direct:local", i);
                        outcomes.add("admitted");
                    } catch (CamelExecutionException e) {
                        outcomes.add(e.getCause().getClass().getSimpleName().equals("TokenBucketRejectedException")
                                ? "rejected" : e.getCause().toString());
                    }
                }
                try {
                    camel.getEndpoint("tokenbucket:remote?store=redis");
                    outcomes.add("store=redis opened");
                } catch (RuntimeException e) {
                    Throwable root = e;
                    while (root.getCause() != null) {
                        root = root.getCause();
                    }
                    outcomes.add("store=redis: " + root.getMessage());
                }
            }
            return outcomes;
        }
    }
}
