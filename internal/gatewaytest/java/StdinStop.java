// The test's way to stop a program of this directory: a flag raised once the process's stdin ends.
import java.util.concurrent.atomic.AtomicBoolean;

final class StdinStop {
    private StdinStop() {}

    /** Starts a daemon thread reading stdin; the flag turns true at its end (EOF or a closed pipe). */
    static AtomicBoolean watch() {
        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                }
            } catch (Exception e) {
                // EOF or a closed pipe both mean stop
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        return stop;
    }
}
