/**
 * The example application in a JVM of its own: {@link ExampleJvm} starts {@code io.tokenbucket.example.ExampleApp}
 * as an operator does (a class path and {@code -D} settings), and lets a test read its output, wait for its end and
 * kill it. Shared by routes-example's fleet test (on its own test class path) and src-it (on the built jars); it
 * knows the example only by its main class's name.
 */
package io.tokenbucket.testsupport.jvm;
