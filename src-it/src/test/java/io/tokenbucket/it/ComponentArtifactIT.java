package io.tokenbucket.it;

import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import io.tokenbucket.camel.TokenBucketComponent;
import io.tokenbucket.camel.TokenBucketComponentConfigurer;
import io.tokenbucket.camel.TokenBucketConfiguration;
import io.tokenbucket.camel.TokenBucketConstants;
import io.tokenbucket.camel.TokenBucketEndpoint;
import io.tokenbucket.camel.TokenBucketEndpointConfigurer;
import io.tokenbucket.camel.TokenBucketEndpointUriFactory;
import io.tokenbucket.camel.TokenBucketMode;
import io.tokenbucket.camel.TokenBucketRejectedException;
import io.tokenbucket.camel.TokenBucketStoreType;
import org.apache.camel.CamelExecutionException;
import org.apache.camel.Exchange;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.ResolveEndpointFailedException;
import org.apache.camel.catalog.CamelCatalog;
import org.apache.camel.catalog.DefaultCamelCatalog;
import org.apache.camel.catalog.EndpointValidationResult;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.main.Main;
import org.apache.camel.spi.EndpointUriFactory;
import org.apache.camel.spi.GeneratedPropertyConfigurer;
import org.apache.camel.spi.PropertyConfigurer;
import org.apache.camel.support.PluginHelper;
import org.apache.camel.tooling.model.BaseOptionModel;
import org.apache.camel.tooling.model.ComponentModel;
import org.apache.camel.tooling.model.JsonMapper;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The built {@code camel-tokenbucket} jar is a real Camel component: Camel finds it by its scheme alone, uses
 * its generated configurers and URI factory, serves its component JSON, refuses bad URIs naming the option,
 * and applies Camel Main's {@code camel.component.tokenbucket.*} defaults.
 *
 * <p>Run by Failsafe in {@code integration-test}, after {@code package}, so the component on the classpath is
 * the jar (from the reactor or the local repository), not {@code camel-tokenbucket/target/classes}: the first
 * test checks that, because a jar missing its generated classes or service files is exactly what it is for.
 */
class ComponentArtifactIT {

    private static final String SERVICES = "META-INF/services/org/apache/camel/";

    /** Every documented endpoint option (besides the path {@code name}) with its documented default. */
    private static final Map<String, String> OPTION_DEFAULTS = orderedMap(
            "capacity", "1",
            "refillAmount", null, // the capacity
            "refillPeriod", "1s",
            "keyHeader", "CamelTokenBucketKey",
            "requireKey", "false",
            "cost", "1",
            "mode", "delay",
            "maxWait", null, // unset: 365 days, the longest wait of any exchange
            "maxWaiting", "100000",
            "maxCandidates", "100",
            "store", "local");

    private static final List<String> HEADERS = List.of("CamelTokenBucketKey", "CamelTokenBucketCost",
            "CamelTokenBucketAllowed", "CamelTokenBucketWaited", "CamelTokenBucketRemaining");

    private DefaultCamelContext context;

    @BeforeEach
    void startPlainContext() {
        context = new DefaultCamelContext(); // no component added: tokenbucket must be found by its scheme
        context.start();
    }

    @AfterEach
    void stopContext() {
        context.stop();
    }

    // --- the artifact --------------------------------------------------------------------------------------

    @Test
    void componentIsLoadedFromTheBuiltJarWithItsGeneratedClassesAndServiceFiles() throws IOException {
        Path jar = BuiltComponent.jar();
        assertThat(jar).as("the component must come from the packaged jar; run through 'mvn verify', where"
                + " Failsafe runs after package").isRegularFile();
        assertThat(jar.getFileName().toString()).startsWith("camel-tokenbucket-").endsWith(".jar");
        for (Class<?> generated : List.of(TokenBucketComponentConfigurer.class, TokenBucketEndpointConfigurer.class,
                TokenBucketEndpointUriFactory.class)) {
            assertThat(BuiltComponent.locationOf(generated)).as(generated.getSimpleName()).isEqualTo(jar);
        }
        try (JarFile file = new JarFile(jar.toFile())) {
            assertThat(BuiltComponent.read(file, SERVICES + "component/tokenbucket"))
                    .contains("class=io.tokenbucket.camel.TokenBucketComponent");
            assertThat(BuiltComponent.read(file, SERVICES + "configurer/tokenbucket-component"))
                    .contains("class=io.tokenbucket.camel.TokenBucketComponentConfigurer");
            assertThat(BuiltComponent.read(file, SERVICES + "configurer/tokenbucket-endpoint"))
                    .contains("class=io.tokenbucket.camel.TokenBucketEndpointConfigurer");
            assertThat(BuiltComponent.read(file, SERVICES + "urifactory/tokenbucket-endpoint"))
                    .contains("class=io.tokenbucket.camel.TokenBucketEndpointUriFactory");
            assertThat(file.getEntry(BuiltComponent.JSON_ENTRY)).as(BuiltComponent.JSON_ENTRY).isNotNull();
        }
    }

    // --- (a) discovery ------------------------------------------------------------------------------------

    @Test
    void plainContextFindsTheComponentBySchemeAndCreatesAnEndpointFromAUri() {
        assertThat(context.hasComponent("tokenbucket")).as("nothing registered by hand").isNull();

        TokenBucketEndpoint endpoint = context.getEndpoint("tokenbucket:proxies?capacity=5&refillAmount=2"
                + "&refillPeriod=500ms&keyHeader=proxyId&requireKey=true&cost=2&mode=delay&maxWait=3s&store=local",
                TokenBucketEndpoint.class);

        assertThat(context.getComponent("tokenbucket")).isInstanceOf(TokenBucketComponent.class);
        assertThat(endpoint.getName()).isEqualTo("proxies");
        TokenBucketConfiguration c = endpoint.getConfiguration();
        assertThat(c.getCapacity()).isEqualTo(5);
        assertThat(c.getRefillAmount()).isEqualTo(2);
        assertThat(c.getRefillPeriod()).isEqualTo(500);
        assertThat(c.getKeyHeader()).isEqualTo("proxyId");
        assertThat(c.isRequireKey()).isTrue();
        assertThat(c.getCost()).isEqualTo(2);
        assertThat(c.getMode()).isEqualTo(TokenBucketMode.delay);
        assertThat(c.getMaxWait()).isEqualTo(3000L);
        assertThat(c.getStore()).isEqualTo(TokenBucketStoreType.local);
    }

    @Test
    void endpointWithoutOptionsHasTheDocumentedDefaults() {
        TokenBucketConfiguration c = context.getEndpoint("tokenbucket:plain", TokenBucketEndpoint.class)
                .getConfiguration();

        assertThat(c.getCapacity()).isEqualTo(1);
        assertThat(c.getRefillAmount()).as("defaults to the capacity").isEqualTo(1);
        assertThat(c.getRefillPeriod()).isEqualTo(1000);
        assertThat(c.getKeyHeader()).isEqualTo(TokenBucketConstants.KEY);
        assertThat(c.isRequireKey()).isFalse();
        assertThat(c.getCost()).isEqualTo(1);
        assertThat(c.getMode()).isEqualTo(TokenBucketMode.delay);
        assertThat(c.getMaxWait()).isNull();
        assertThat(c.getStore()).isEqualTo(TokenBucketStoreType.local);
    }

    @Test
    void endpointFromTheJarThrottlesExchangesPerKey() {
        ProducerTemplate template = context.createProducerTemplate();
        String check = "tokenbucket:once?capacity=1&refillPeriod=1h&mode=check";
        String reject = "tokenbucket:strict?capacity=1&refillPeriod=1h&mode=reject";

        Exchange first = template.request(check, e -> e.getMessage().setHeader(TokenBucketConstants.KEY, "a"));
        Exchange second = template.request(check, e -> e.getMessage().setHeader(TokenBucketConstants.KEY, "a"));
        Exchange otherKey = template.request(check, e -> e.getMessage().setHeader(TokenBucketConstants.KEY, "b"));

        assertThat(first.getMessage().getHeader(TokenBucketConstants.ALLOWED)).isEqualTo(true);
        assertThat(first.getMessage().getHeader(TokenBucketConstants.REMAINING)).isEqualTo(0L);
        assertThat(second.getMessage().getHeader(TokenBucketConstants.ALLOWED)).isEqualTo(false);
        assertThat(otherKey.getMessage().getHeader(TokenBucketConstants.ALLOWED)).isEqualTo(true);

        template.sendBody(reject, "first");
        assertThatThrownBy(() -> template.sendBody(reject, "second"))
                .isInstanceOf(CamelExecutionException.class)
                .hasCauseInstanceOf(TokenBucketRejectedException.class);
    }

    // --- (b) generated configurers and URI factory ------------------------------------------------------------

    @Test
    void generatedConfigurersAreTheOnesCamelUses() {
        PropertyConfigurer endpointConfigurer = PluginHelper.getConfigurerResolver(context)
                .resolvePropertyConfigurer("tokenbucket-endpoint", context);
        PropertyConfigurer componentConfigurer = PluginHelper.getConfigurerResolver(context)
                .resolvePropertyConfigurer("tokenbucket-component", context);
        TokenBucketComponent component = context.getComponent("tokenbucket", TokenBucketComponent.class);

        assertThat(endpointConfigurer).isInstanceOf(TokenBucketEndpointConfigurer.class);
        assertThat(componentConfigurer).isInstanceOf(TokenBucketComponentConfigurer.class);
        assertThat(component.getEndpointPropertyConfigurer()).isInstanceOf(TokenBucketEndpointConfigurer.class);
        // the component's own: the generated one, reading the text of the numeric options first
        PropertyConfigurer reading = component.getComponentPropertyConfigurer();
        assertThat(reading).isInstanceOf(GeneratedPropertyConfigurer.class);
        assertThat(reading.configure(context, component, "maxinflight", "4", true)).isTrue();
        assertThat(component.getConfiguration().getMaxInFlight()).isEqualTo(4);
        assertThatThrownBy(() -> reading.configure(context, component, "maxInFlight", "abc", false))
                .hasMessage("maxInFlight must be a whole number, was 'abc'");
        assertThat(reading.configure(context, component, "maxInFlight", "0", false)).isTrue();

        TokenBucketEndpoint endpoint = context.getEndpoint("tokenbucket:configured", TokenBucketEndpoint.class);
        assertThat(endpointConfigurer.configure(context, endpoint, "capacity", "9", false)).isTrue();
        assertThat(endpointConfigurer.configure(context, endpoint, "refillperiod", "2m", true)).isTrue();
        assertThat(endpointConfigurer.configure(context, endpoint, "capacty", "9", false)).isFalse();
        assertThat(endpoint.getConfiguration().getCapacity()).isEqualTo(9);
        assertThat(endpoint.getConfiguration().getRefillPeriod()).isEqualTo(120_000);
    }

    @Test
    void generatedUriFactoryBuildsAUriThatCreatesTheSameEndpoint() throws Exception {
        EndpointUriFactory factory = context.getCamelContextExtension().getEndpointUriFactory("tokenbucket");

        assertThat(factory).isInstanceOf(TokenBucketEndpointUriFactory.class);
        assertThat(factory.isLenientProperties()).isFalse();
        assertThat(factory.propertyNames()).containsAll(OPTION_DEFAULTS.keySet()).contains("name");

        Map<String, Object> properties = new LinkedHashMap<>();
        properties.put("name", "proxies");
        properties.put("capacity", 5);
        properties.put("refillPeriod", "2s");
        properties.put("mode", "reject");
        String uri = factory.buildUri("tokenbucket", properties, false);

        assertThat(uri).isEqualTo("tokenbucket:proxies?capacity=5&mode=reject&refillPeriod=2s");
        TokenBucketConfiguration c = context.getEndpoint(uri, TokenBucketEndpoint.class).getConfiguration();
        assertThat(c.getCapacity()).isEqualTo(5);
        assertThat(c.getRefillPeriod()).isEqualTo(2000);
        assertThat(c.getMode()).isEqualTo(TokenBucketMode.reject);
    }

    // --- (c) the component JSON ----------------------------------------------------------------------------

    @Test
    void componentJsonInTheJarDocumentsEveryOptionAndHeader() throws IOException {
        String json = BuiltComponent.json();
        assertThat(context.getComponentParameterJsonSchema("tokenbucket"))
                .as("what Camel serves at runtime is the jar's JSON").isEqualTo(json);

        ComponentModel model = JsonMapper.generateComponentModel(json);
        assertThat(model.getScheme()).isEqualTo("tokenbucket");
        assertThat(model.getSyntax()).isEqualTo("tokenbucket:name");
        assertThat(model.getJavaType()).isEqualTo(TokenBucketComponent.class.getName());
        assertThat(model.getArtifactId()).isEqualTo("camel-tokenbucket");
        assertThat(model.isProducerOnly()).isTrue();
        assertThat(model.isLenientProperties()).isFalse();

        Map<String, ComponentModel.EndpointOptionModel> endpoint = byName(model.getEndpointOptions());
        assertThat(endpoint.get("name").getKind()).isEqualTo("path");
        assertThat(endpoint.get("name").isRequired()).isTrue();
        OPTION_DEFAULTS.forEach((name, expected) -> {
            assertThat(endpoint).as("endpoint option %s", name).containsKey(name);
            assertThat(defaultOf(endpoint.get(name))).as("default of %s", name).isEqualTo(expected);
            assertThat(endpoint.get(name).getDescription()).as("description of %s", name).isNotBlank();
        });
        assertThat(endpoint.get("mode").getEnums()).containsExactly("delay", "reject", "check");
        assertThat(endpoint.get("store").getEnums()).contains("local");
        assertThat(endpoint.get("refillPeriod").getType()).isEqualTo("duration");
        assertThat(endpoint.get("maxWait").getType()).isEqualTo("duration");
        assertThat(endpoint.keySet()).as("the JSON and the generated URI factory agree")
                .containsExactlyInAnyOrderElementsOf(new TokenBucketEndpointUriFactory().propertyNames());

        Map<String, ComponentModel.ComponentOptionModel> component = byName(model.getComponentOptions());
        OPTION_DEFAULTS.forEach((name, expected) ->
                assertThat(defaultOf(component.get(name))).as("component default of %s", name).isEqualTo(expected));
        assertThat(component).containsKeys("configuration", "workerPool");
        assertThat(component.get("workerPool").getLabel()).contains("advanced");
        assertThat(component.get("workerPool").getJavaType()).isEqualTo("java.util.concurrent.ExecutorService");

        assertThat(model.getEndpointHeaders()).extracting(BaseOptionModel::getName).containsAll(HEADERS);
        assertThat(model.getEndpointHeaders()).allSatisfy(header -> {
            assertThat(header.getDescription()).isNotBlank();
            assertThat(header.getConstantName()).startsWith(TokenBucketConstants.class.getName() + "#");
        });
    }

    @Test
    void camelCatalogLoadedWithTheJarJsonValidatesTokenbucketUris() {
        CamelCatalog catalog = new DefaultCamelCatalog();
        catalog.addComponent("tokenbucket", TokenBucketComponent.class.getName(), BuiltComponent.json());

        assertThat(catalog.validateEndpointProperties("tokenbucket:proxies?capacity=5&mode=reject&refillPeriod=2s")
                .isSuccess()).isTrue();
        EndpointValidationResult typo = catalog.validateEndpointProperties("tokenbucket:x?capacty=5");
        assertThat(typo.isSuccess()).isFalse();
        assertThat(typo.getUnknown()).containsExactly("capacty");
        EndpointValidationResult badEnum = catalog.validateEndpointProperties("tokenbucket:x?mode=bogus");
        assertThat(badEnum.isSuccess()).isFalse();
        assertThat(badEnum.getInvalidEnum()).containsEntry("mode", "bogus");
    }

    // --- (d) bad URIs ----------------------------------------------------------------------------------------

    @Test
    void unknownOptionFailsEndpointCreationNamingIt() {
        assertThatThrownBy(() -> context.getEndpoint("tokenbucket:x?capacty=5"))
                .isInstanceOf(ResolveEndpointFailedException.class)
                .hasMessageContaining("Unknown parameters=[{capacty=5}]");
    }

    static Stream<Arguments> invalidValues() {
        return Stream.of(
                Arguments.of("capacity=0", "capacity must be at least 1, was 0"),
                Arguments.of("refillAmount=0", "refillAmount must be at least 1, was 0"),
                Arguments.of("refillPeriod=0ms", "refillPeriod must be at least 1 millisecond, was 0"),
                Arguments.of("cost=3", "cost must be between 1 and capacity 1, was 3"),
                Arguments.of("maxWait=-1", "maxWait must be between 0 and 365d (31536000000 ms, the longest wait of"
                        + " any exchange), was -1 ms"),
                Arguments.of("maxWaiting=-1", "maxWaiting must not be negative, was -1"),
                Arguments.of("keyHeader=", "keyHeader must name a header, was ''"),
                Arguments.of("mode=bogus", "Error binding property (mode=bogus) with name: mode"),
                Arguments.of("store=nowhere", "Error binding property (store=nowhere) with name: store"),
                Arguments.of("requireKey=yes", "Error binding property (requireKey=yes) with name: requireKey"));
    }

    @ParameterizedTest(name = "tokenbucket:x?{0}")
    @MethodSource("invalidValues")
    void invalidValueFailsEndpointCreationNamingOptionAndValue(String query, String expected) {
        assertThatThrownBy(() -> context.getEndpoint("tokenbucket:x?" + query))
                .isInstanceOf(ResolveEndpointFailedException.class)
                .hasMessageContaining(expected);
    }

    @Test
    void nonNumericValueFailsEndpointCreationWithAReasonNamingTheText() {
        for (String query : List.of("capacity=abc", "refillAmount=abc", "cost=abc", "refillPeriod=abc",
                "maxWait=abc")) {
            String option = query.substring(0, query.indexOf('='));
            // the reason names the option and its text, whatever the URI shows
            assertThatThrownBy(() -> context.getEndpoint("tokenbucket:x?" + query)).as(query)
                    .isInstanceOf(ResolveEndpointFailedException.class)
                    .cause()
                    .hasMessageContaining(option)
                    .hasMessageContaining("abc");
        }
    }

    // --- (e) Camel Main component defaults ---------------------------------------------------------------

    @Test
    void camelMainComponentPropertiesBecomeEveryEndpointsDefaults() throws Exception {
        Main main = new Main();
        main.addInitialProperty("camel.component.tokenbucket.capacity", "7");
        main.addInitialProperty("camel.component.tokenbucket.refill-period", "250ms");
        main.addInitialProperty("camel.component.tokenbucket.mode", "reject");
        main.start();
        try {
            TokenBucketConfiguration defaults = main.getCamelContext()
                    .getEndpoint("tokenbucket:defaults", TokenBucketEndpoint.class).getConfiguration();
            TokenBucketConfiguration overridden = main.getCamelContext()
                    .getEndpoint("tokenbucket:overridden?capacity=3", TokenBucketEndpoint.class).getConfiguration();

            assertThat(defaults.getCapacity()).isEqualTo(7);
            assertThat(defaults.getRefillAmount()).as("defaults to the capacity").isEqualTo(7);
            assertThat(defaults.getRefillPeriod()).isEqualTo(250);
            assertThat(defaults.getMode()).isEqualTo(TokenBucketMode.reject);
            assertThat(overridden.getCapacity()).as("the URI wins").isEqualTo(3);
            assertThat(overridden.getMode()).as("the rest keeps the component default")
                    .isEqualTo(TokenBucketMode.reject);
        } finally {
            main.stop();
        }
    }

    @Test
    void camelMainRefusesAMisspeltComponentPropertyNamingIt() {
        Main main = new Main();
        main.addInitialProperty("camel.component.tokenbucket.capacty", "7");
        try {
            assertThatThrownBy(main::start).hasMessageContaining("capacty");
        } finally {
            main.stop();
        }
    }

    // --- helpers ------------------------------------------------------------------------------------------

    private static <O extends BaseOptionModel> Map<String, O> byName(List<O> options) {
        return options.stream().collect(Collectors.toMap(BaseOptionModel::getName, Function.identity()));
    }

    private static String defaultOf(BaseOptionModel option) {
        Object value = option.getDefaultValue();
        return value == null || "".equals(value) ? null : String.valueOf(value);
    }

    private static Map<String, String> orderedMap(String... keysAndValues) {
        Map<String, String> map = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            map.put(keysAndValues[i], keysAndValues[i + 1]);
        }
        return map;
    }
}
