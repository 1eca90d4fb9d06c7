package org.ucx4j.internal;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Objects addressed by small integer ids: the ids that UCX user data carries back to an upcall (the
 * lower half of the word, see {@link Upcalls#userData}). Ids are reused, most recently freed first.
 *
 * <p>Threading: not thread-safe; a worker's tables are used only by the holder of its progress lock.
 *
 * @param <T> what the table holds
 */
public final class IdTable<T> {
    private Object[] items;
    private int[] freeIds;
    private int freeCount;
    private int size;

    /**
     * Creates an empty table.
     *
     * @param capacity the ids available before it grows
     */
    public IdTable(int capacity) {
        items = new Object[capacity];
        freeIds = new int[capacity];
        pushFree(0, capacity);
    }

    private void pushFree(int from, int to) {
        for (int i = to - 1; i >= from; i--) {
            freeIds[freeCount++] = i;
        }
    }

    /** Takes a free id without an object yet ({@link #set} fills it, {@link #unreserve} gives it back). */
    public int reserve() {
        if (freeCount == 0) {
            int old = items.length;
            items = Arrays.copyOf(items, old * 2);
            freeIds = Arrays.copyOf(freeIds, old * 2);
            pushFree(old, old * 2);
        }
        return freeIds[--freeCount];
    }

    /** Stores {@code item} under a reserved id. */
    public void set(int id, T item) {
        if (items[id] == null) {
            size++;
        }
        items[id] = item;
    }

    /** Stores {@code item} under a fresh id and returns the id. */
    public int add(T item) {
        int id = reserve();
        set(id, item);
        return id;
    }

    /** The object under {@code id}, or null (also for an id out of range: it came from native memory). */
    @SuppressWarnings("unchecked")
    public T get(int id) {
        Object[] table = items;
        return id >= 0 && id < table.length ? (T) table[id] : null;
    }

    /** Frees {@code id} if it still holds {@code item}; false when it does not. */
    public boolean remove(int id, T item) {
        if (id >= 0 && id < items.length && items[id] == item && item != null) {
            items[id] = null;
            freeIds[freeCount++] = id;
            size--;
            return true;
        }
        return false;
    }

    /** Gives back a reserved id whose object never came to be (or is gone). */
    public void unreserve(int id) {
        if (items[id] != null) {
            items[id] = null;
            size--;
        }
        freeIds[freeCount++] = id;
    }

    /** How many ids hold an object. */
    public int size() {
        return size;
    }

    /** A snapshot of every object in the table. */
    @SuppressWarnings("unchecked")
    public List<T> all() {
        List<T> out = new ArrayList<>(size);
        for (Object item : items) {
            if (item != null) {
                out.add((T) item);
            }
        }
        return out;
    }
}
