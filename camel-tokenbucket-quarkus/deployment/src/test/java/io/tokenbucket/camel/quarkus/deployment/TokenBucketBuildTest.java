package io.tokenbucket.camel.quarkus.deployment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.util.List;
import java.util.stream.Stream;

import io.quarkus.builder.BuildContext;
import io.quarkus.deployment.builditem.FeatureBuildItem;
import io.quarkus.deployment.builditem.nativeimage.NativeImageResourceBuildItem;
import io.quarkus.deployment.builditem.nativeimage.NativeImageResourcePatternsBuildItem;
import io.quarkus.deployment.builditem.nativeimage.ReflectiveClassBuildItem;
import io.quarkus.test.QuarkusUnitTest;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * One application build, checked twice (one boot for both): what the build registers for a native image, by this
 * extension and by Camel Quarkus's core together (the generated configurers and URI factory for reflection, the
 * catalog JSON and the Lua scripts as resources), and a bad {@code camel.component.tokenbucket.*} value in
 * application.properties failing the start, naming the option.
 */
class TokenBucketBuildTest {

    /** Where the build step below leaves what it saw: a system property, the one place both class loaders share. */
    private static final String SEEN = "tokenbucket.test.native-items";

    @RegisterExtension
    static final QuarkusUnitTest APP = new QuarkusUnitTest()
            .withApplicationRoot(jar -> jar.addClass(Routes.class))
            .overrideConfigKey("camel.component.tokenbucket.capacity", "0")
            .addBuildChainCustomizer(chain -> chain.addBuildStep(TokenBucketBuildTest::record)
                    .consumes(ReflectiveClassBuildItem.class)
                    .consumes(NativeImageResourceBuildItem.class)
                    .consumes(NativeImageResourcePatternsBuildItem.class)
                    .produces(FeatureBuildItem.class)
                    .build())
            .assertException(failure -> {
                assertThat(failure).hasStackTraceContaining("capacity must be at least 1, was 0");
                @SuppressWarnings("unchecked")
                List<String> seen = (List<String>) System.getProperties().get(SEEN);
                assertThat(seen).as("what the build registered for a native image").contains(
                        "reflective io.tokenbucket.camel.TokenBucketComponent",
                        "reflective io.tokenbucket.camel.TokenBucketComponentConfigurer",
                        "reflective io.tokenbucket.camel.TokenBucketEndpointConfigurer",
                        "reflective io.tokenbucket.camel.TokenBucketEndpointUriFactory",
                        "reflective io.tokenbucket.camel.TokenBucketMode",
                        "reflective io.tokenbucket.camel.TokenBucketRejectedException",
                        "resource META-INF/io/tokenbucket/camel/tokenbucket.json");
                assertThat(seen).anyMatch(item -> item.startsWith("pattern ")
                        && "io/tokenbucket/store/redis/bucket.lua".matches(item.substring("pattern ".length())));
            });

    @Test
    void theApplicationDoesNotStart() {
        fail("the application started with capacity=0");
    }

    /** A build step that sees every native-image item the build makes (which the build then makes in JVM mode). */
    private static void record(BuildContext context) {
        List<String> seen = Stream.of(
                context.consumeMulti(ReflectiveClassBuildItem.class).stream()
                        .flatMap(item -> item.getClassNames().stream()).map(name -> "reflective " + name),
                context.consumeMulti(NativeImageResourceBuildItem.class).stream()
                        .flatMap(item -> item.getResources().stream()).map(name -> "resource " + name),
                context.consumeMulti(NativeImageResourcePatternsBuildItem.class).stream()
                        .flatMap(item -> item.getIncludePatterns().stream()).map(pattern -> "pattern " + pattern))
                .flatMap(s -> s).toList();
        System.getProperties().put(SEEN, seen);
        context.produce(new FeatureBuildItem("tokenbucket-build-test"));
    }

    /** One route with a tokenbucket endpoint, which takes the component's options. */
    public static class Routes extends RouteBuilder {
        @Override
        public void configure() {
            from("direct:in").to("tokenbucket:x");
        }
    }
}
