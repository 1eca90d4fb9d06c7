package org.ucx4j;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A growable table of objects addressed by small integer ids, the lower half of UCX user data. Used
 * only by the holder of the worker's progress lock.
 */
final class Slots<T> {
    private Object[] items = new Object[8];
    private int next;
    private final ArrayList<Integer> free = new ArrayList<>();

    int reserve() {
        if (!free.isEmpty()) {
            return free.removeLast();
        }
        if (next == items.length) {
            items = Arrays.copyOf(items, items.length * 2);
        }
        return next++;
    }

    void set(int id, T item) {
        items[id] = item;
    }

    @SuppressWarnings("unchecked")
    T get(int id) {
        return id >= 0 && id < next ? (T) items[id] : null;
    }

    void remove(int id, T item) {
        if (id >= 0 && id < next && items[id] == item) {
            items[id] = null;
            free.add(id);
        }
    }

    void unreserve(int id) {
        items[id] = null;
        free.add(id);
    }

    @SuppressWarnings("unchecked")
    List<T> all() {
        List<T> out = new ArrayList<>();
        for (int i = 0; i < next; i++) {
            if (items[i] != null) {
                out.add((T) items[i]);
            }
        }
        return out;
    }
}
