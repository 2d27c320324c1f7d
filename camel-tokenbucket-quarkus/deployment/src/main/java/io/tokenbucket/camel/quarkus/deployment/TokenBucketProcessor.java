package io.tokenbucket.camel.quarkus.deployment;

import java.util.ArrayList;
import java.util.List;

import io.quarkus.arc.deployment.AdditionalBeanBuildItem;
import io.quarkus.deployment.Capabilities;
import io.quarkus.deployment.Capability;
import io.quarkus.deployment.annotations.BuildStep;
import io.quarkus.deployment.builditem.CombinedIndexBuildItem;
import io.quarkus.deployment.builditem.FeatureBuildItem;
import io.quarkus.deployment.builditem.nativeimage.NativeImageResourcePatternsBuildItem;
import io.quarkus.deployment.builditem.nativeimage.ReflectiveClassBuildItem;
import io.tokenbucket.camel.TokenBucketComponent;
import io.tokenbucket.camel.TokenBucketException;
import org.jboss.jandex.ClassInfo;
import org.jboss.jandex.DotName;
import org.jboss.jandex.IndexView;

/**
 * The build steps of the tokenbucket extension: what the component needs of Quarkus beyond what Camel Quarkus's core
 * does for every component.
 *
 * <p>Camel Quarkus's core already finds the component's {@code META-INF/services/org/apache/camel} files (the
 * component, its generated configurers and URI factory), registers the classes they name for reflection, and adds
 * the component's catalog JSON ({@code META-INF/io/tokenbucket/camel/tokenbucket.json}) to a native image with the
 * runtime catalog; it registers the component, endpoint and producer classes from the component jar's Jandex index.
 * This processor adds the rest: the Redis store's Lua scripts, which it reads as class-path resources; the option
 * enums, which Camel converts from text by their constants; the exceptions, which routes name by class in YAML or
 * XML ({@code onException}); and the readiness check when the application has SmallRye Health.
 *
 * <p>Native mode is prepared by these steps but not built or tested here (no GraalVM where this project is built).
 */
class TokenBucketProcessor {

    /** The feature listed in Quarkus's start-up line. */
    static final String FEATURE = "camel-tokenbucket";
    /** The Redis store's scripts, read by {@code BucketScript} with {@code getResourceAsStream}. */
    static final String LUA_SCRIPTS = "io/tokenbucket/store/redis/*.lua";

    /** Named, not referenced: its class implements the MicroProfile Health API, absent without SmallRye Health. */
    static final String READINESS_CHECK = "io.tokenbucket.camel.quarkus.TokenBucketReadinessCheck";

    private static final DotName EXCEPTION = DotName.createSimple(TokenBucketException.class.getName());
    private static final String PACKAGE = TokenBucketComponent.class.getPackageName() + ".";

    @BuildStep
    FeatureBuildItem feature() {
        return new FeatureBuildItem(FEATURE);
    }

    @BuildStep
    NativeImageResourcePatternsBuildItem luaScripts() {
        return NativeImageResourcePatternsBuildItem.builder().includeGlob(LUA_SCRIPTS).build();
    }

    /** The component's enums and exceptions, found in its Jandex index so a new one cannot be forgotten. */
    @BuildStep
    ReflectiveClassBuildItem enumsAndExceptions(CombinedIndexBuildItem combinedIndex) {
        IndexView index = combinedIndex.getIndex();
        List<String> classes = new ArrayList<>();
        classes.add(EXCEPTION.toString());
        index.getAllKnownSubclasses(EXCEPTION).forEach(c -> classes.add(c.name().toString()));
        for (ClassInfo c : index.getKnownClasses()) {
            if (c.isEnum() && c.name().toString().startsWith(PACKAGE)) {
                classes.add(c.name().toString());
            }
        }
        return ReflectiveClassBuildItem.builder(classes.toArray(String[]::new)).methods().fields().build();
    }

    /** Quarkus's health endpoint shows the endpoints' readiness when the application has SmallRye Health. */
    @BuildStep
    AdditionalBeanBuildItem readinessCheck(Capabilities capabilities) {
        return capabilities.isPresent(Capability.SMALLRYE_HEALTH)
                ? AdditionalBeanBuildItem.builder().addBeanClass(READINESS_CHECK).setUnremovable().build()
                : null;
    }
}
