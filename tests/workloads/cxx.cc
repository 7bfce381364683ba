// C++ names as programs have them (issue #43): a namespace, a class template, an overloaded
// operator, a const method, a lambda and a std::function, each a frame of the stack under
// getppid. Built with frame pointers: the names are under test here, not the unwinding.
#include <functional>
#include <unistd.h>

namespace shapes {

template <typename T> struct Box {
    T value;
    long operator()(int times) const;
    long measure(const char *label, T scale) const;
};

template <typename T>
__attribute__((noinline)) long Box<T>::operator()(int times) const {
    long sum = 0;
    for (int i = 0; i < times; i++)
        sum += getppid();
    return sum + static_cast<long>(value);
}

template <typename T>
__attribute__((noinline)) long Box<T>::measure(const char *label, T scale) const {
    std::function<long(int)> call = [this](int n) { return (*this)(n); };
    return call(1) + static_cast<long>(scale) + (label != nullptr);
}

} // namespace shapes

__attribute__((noinline)) static long run(int rounds) {
    shapes::Box<double> box{1.5};
    long total = 0;
    for (int i = 0; i < rounds; i++)
        total += box.measure("round", 2.0);
    return total;
}

int main(int argc, char **argv) {
    return run(argc > 1 ? 2 : 1) > 0 ? 0 : 1;
}
