package io.tokenbucket.camel.springboot.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import org.apache.camel.CamelContext;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

/**
 * What a Spring Boot 3.5 application that pins lettuce-core 7 meets: this module's class path (Spring Boot's Netty
 * 4.1) with Lettuce 7 in place of Spring Boot's Lettuce 6. A {@code store=redis} route then fails to start with
 * the component's message naming both versions and what to align, not a bare {@code NoClassDefFoundError}.
 */
class TokenBucketLettuceOnOldNettyTest {

    @Test
    void lettuce7OnNetty41SaysWhatToDo() throws Exception {
        Path lettuce7 = Path.of(System.getProperty("tokenbucket.lettuce7.jar"));
        assertThat(lettuce7).exists();
        List<URL> urls = new ArrayList<>();
        int replaced = 0;
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            File file = new File(entry);
            if (file.getName().startsWith("lettuce-core-")) {
                urls.add(lettuce7.toUri().toURL());
                replaced++;
            } else {
                urls.add(file.toURI().toURL());
            }
        }
        assertThat(replaced).isEqualTo(1);
        Thread thread = Thread.currentThread();
        ClassLoader previous = thread.getContextClassLoader();
        try (URLClassLoader loader = new URLClassLoader(urls.toArray(new URL[0]),
                ClassLoader.getPlatformClassLoader())) {
            @SuppressWarnings("unchecked")
            Callable<String> start = (Callable<String>) loader.loadClass(StartRedisRoute.class.getName())
                    .getDeclaredConstructor().newInstance();
            thread.setContextClassLoader(loader);
            String failure = start.call();
            assertThat(failure).contains("TokenBucketStoreException", "the Redis client cannot be created",
                    "Lettuce 7.", "netty-transport 4.1.", "Lettuce 7 needs Netty 4.2", "netty-bom",
                    "NoClassDefFoundError");
        } finally {
            thread.setContextClassLoader(previous);
        }
    }

    /** In the class loader with Lettuce 7: starts a store=redis route; answers its failure as text. */
    public static final class StartRedisRoute implements Callable<String> {

        @Override
        public String call() throws Exception {
            try (CamelContext camel = new DefaultCamelContext()) {
                camel.addRoutes(new RouteBuilder() {
                    @Override
                    public void configure() {
                        from("direct:a").to("tokenbucket:a?store=redis&redisUri=redis://127.0.0.1:1");
                    }
                });
                try {
                    camel.start();
                    return "started";
                } catch (RuntimeException e) {
                    java.io.StringWriter text = new java.io.StringWriter();
                    e.printStackTrace(new java.io.PrintWriter(text));
                    return text.toString();
                }
            }
        }
    }
}
