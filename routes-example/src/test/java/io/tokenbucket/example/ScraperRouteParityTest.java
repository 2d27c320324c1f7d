package io.tokenbucket.example;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.fetch.NoTokenRetry;
import io.tokenbucket.example.fetch.Scrape;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.NamedNode;
import org.apache.camel.Predicate;
import org.apache.camel.model.CatchDefinition;
import org.apache.camel.model.ChoiceDefinition;
import org.apache.camel.model.ModelCamelContext;
import org.apache.camel.model.OnExceptionDefinition;
import org.apache.camel.model.ProcessorDefinition;
import org.apache.camel.model.RouteDefinition;
import org.apache.camel.model.RoutesDefinition;
import org.apache.camel.model.TryDefinition;
import org.apache.camel.model.WhenDefinition;
import org.apache.camel.model.errorhandler.DefaultErrorHandlerDefinition;
import org.apache.camel.spi.ModelToXMLDumper;
import org.apache.camel.support.DefaultExchange;
import org.apache.camel.support.PluginHelper;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The YAML route ({@code routes/scraper.yaml}) is the Java route ({@link ScraperRoute}), step for step: both are
 * loaded as the application loads them ({@code example.dsl}) and their models, as Camel's XML dump, compared. This is
 * what lets the scenario tests run most scenarios on the Java route alone (each family keeps one scenario on both).
 *
 * <p>Where the two DSLs build the same thing in different model objects, the dump differs in form only, and that part
 * is compared by what it does instead: generated node ids (a counter per context) are left out; the route's error
 * handler (the Java builder's {@code errorHandler(...)} is not in the dump, the YAML route's is) is compared by its
 * type and pool; {@code handled} (a policy in Java, a constant expression in YAML) by evaluating it; the
 * {@code doCatch} clauses (the YAML DSL keeps them beside the {@code doTry}'s outputs, where the dump does not look)
 * are dumped one by one, in order; the {@code choice}'s condition (a Java expression builder, a Simple predicate in
 * YAML) by evaluating it on each outcome.
 */
class ScraperRouteParityTest {

    @TempDir
    static Path dir;

    private static Model java;
    private static Model yaml;

    /** What is compared of one DSL's route. */
    private record Model(String dump, String errorHandler, List<String> catches, List<Boolean> handled,
                         List<Boolean> whens) {
    }

    @BeforeAll
    static void loadBothRoutes() throws Exception {
        try (DemoSite site = new DemoSite(dir, 2, "20/1s", 0, 0, 1000)) {
            java = model("java", site);
            yaml = model("yaml", site);
        }
    }

    @Test
    void theStepsAreTheSame() {
        assertThat(yaml.dump()).isEqualTo(java.dump());
        assertThat(java.dump()).contains("<route id=\"scraper\" routePolicyRef=\"" + ScraperRoute.BACK_PRESSURE + "\">",
                "<loop", "<split", "tokenbucket:proxies?",
                "ref=\"fetchOutcome\"");
    }

    @Test
    void theErrorHandlerIsTheSame() {
        assertThat(yaml.errorHandler()).isEqualTo(java.errorHandler())
                .isEqualTo("DefaultErrorHandlerDefinition executorServiceRef=" + ScraperRoute.RETRY_POOL
                        + " onExceptionOccurredRef=" + NoTokenRetry.BEAN);
    }

    @Test
    void theCatchClausesAreTheSame() {
        assertThat(java.catches()).hasSize(4);
        assertThat(yaml.catches()).isEqualTo(java.catches());
    }

    @Test
    void bothHandlersHandle() {
        assertThat(java.handled()).containsExactly(true, true);
        assertThat(yaml.handled()).isEqualTo(java.handled());
    }

    @Test
    void theChoiceSendsTheSameOutcomesToTheResults() {
        assertThat(java.whens()).containsExactly(true, false, false);
        assertThat(yaml.whens()).isEqualTo(java.whens());
    }

    private static Model model(String dsl, DemoSite site) throws Exception {
        try (ScraperHarness scraper = new ScraperHarness(dsl, dir, site, Map.of())) {
            ModelCamelContext context = (ModelCamelContext) scraper.context;
            ModelToXMLDumper dumper = PluginHelper.getModelToXMLDumper(context);
            List<RouteDefinition> definitions = context.getRouteDefinitions();
            assertThat(definitions).extracting(RouteDefinition::getRouteId).containsExactly(ScraperRoute.ROUTE_ID);
            RouteDefinition route = definitions.get(0);
            RoutesDefinition routes = new RoutesDefinition();
            routes.setRoutes(definitions);
            String dump = dumper.dumpModelAsXml(context, routes)
                    // generated ids ("to12"); the custom ones ("fetch-error") stay
                    .replaceAll(" id=\"[a-zA-Z]+[0-9]+\"", "")
                    .replaceAll("(?s)\\s*<errorHandler>.*?</errorHandler>", "")
                    .replaceAll("(?s)\\s*<handled>.*?</handled>", "")
                    .replaceAll("(?s)\\s*<doCatch>.*?</doCatch>", "")
                    .replaceAll("(?s)(<when>)\\s*<[^>]+>[^<]*</[^>]+>", "$1");
            List<String> catches = new ArrayList<>();
            List<Boolean> handled = new ArrayList<>();
            List<Boolean> whens = new ArrayList<>();
            walk(context, dumper, route.getOutputs(), catches, handled, whens);
            return new Model(dump, errorHandler(route), catches, handled, whens);
        }
    }

    private static String errorHandler(RouteDefinition route) {
        Object handler = route.getErrorHandlerFactory();
        return handler instanceof DefaultErrorHandlerDefinition d
                ? "DefaultErrorHandlerDefinition executorServiceRef=" + d.getExecutorServiceRef()
                        + " onExceptionOccurredRef=" + d.getOnExceptionOccurredRef()
                : String.valueOf(handler);
    }

    private static void walk(CamelContext context, ModelToXMLDumper dumper, List<ProcessorDefinition<?>> steps,
                             List<String> catches, List<Boolean> handled, List<Boolean> whens) throws Exception {
        for (ProcessorDefinition<?> step : steps) {
            if (step instanceof OnExceptionDefinition onException) {
                Predicate policy = onException.getHandledPolicy() != null ? onException.getHandledPolicy()
                        : onException.getHandled().getExpressionType().createPredicate(context);
                handled.add(policy.matches(new DefaultExchange(context)));
            }
            if (step instanceof TryDefinition doTry) {
                for (CatchDefinition doCatch : doTry.getCatchClauses()) {
                    catches.add(dump(context, dumper, doCatch));
                }
                walk(context, dumper, doTry.getOutputsWithoutCatches(), catches, handled, whens);
                continue;
            }
            if (step instanceof ChoiceDefinition choice) {
                for (WhenDefinition when : choice.getWhenClauses()) {
                    Predicate predicate = when.getExpression().createPredicate(context);
                    for (String outcome : new String[] {Scrape.FETCHED, Scrape.DEAD, null}) {
                        Exchange exchange = new DefaultExchange(context);
                        exchange.setProperty(Scrape.OUTCOME, outcome);
                        whens.add(predicate.matches(exchange));
                    }
                    walk(context, dumper, when.getOutputs(), catches, handled, whens);
                }
                if (choice.getOtherwise() != null) {
                    walk(context, dumper, choice.getOtherwise().getOutputs(), catches, handled, whens);
                }
                continue;
            }
            walk(context, dumper, step.getOutputs(), catches, handled, whens);
        }
    }

    private static String dump(CamelContext context, ModelToXMLDumper dumper, NamedNode node) throws Exception {
        return dumper.dumpModelAsXml(context, node).replaceAll(" id=\"[a-zA-Z]+[0-9]+\"", "");
    }
}
