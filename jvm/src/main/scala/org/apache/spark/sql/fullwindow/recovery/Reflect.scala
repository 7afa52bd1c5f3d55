package org.apache.spark.sql.fullwindow.recovery

import java.lang.reflect.{InvocationTargetException, Method, Modifier}

/**
 * Calls into the table formats' classes (Delta Lake, Apache Iceberg) by reflection: the jar
 * depends on neither, and they are there only when the application brings them. A call that
 * finds no such public method, fails or returns null gives None.
 */
private[fullwindow] object Reflect {
  private val boxes: Map[Class[_], Class[_]] = Map(
    java.lang.Boolean.TYPE -> classOf[java.lang.Boolean],
    java.lang.Long.TYPE -> classOf[java.lang.Long],
    java.lang.Integer.TYPE -> classOf[java.lang.Integer])

  private def accepts(m: Method, args: Seq[Any]): Boolean =
    m.getParameterCount == args.size && m.getParameterTypes.zip(args).forall { case (t, a) =>
      a != null && boxes.getOrElse(t, t).isInstance(a)
    }

  private def invoke(m: Method, target: AnyRef, args: Seq[Any]): Option[AnyRef] =
    try Option(callable(m).invoke(target, args.map(_.asInstanceOf[AnyRef]): _*)) catch {
      case _: InvocationTargetException | _: IllegalAccessException |
           _: IllegalArgumentException | _: SecurityException => None
    }

  /** `m`, or where its class is not public (Iceberg's `BaseSnapshot`), the same method of a
   * public interface or superclass it implements (`Snapshot`), which may be called. */
  private def callable(m: Method): Method =
    if (Modifier.isPublic(m.getDeclaringClass.getModifiers)) m
    else {
      def supertypes(c: Class[_]): Seq[Class[_]] =
        if (c == null) Nil else (c.getInterfaces.toSeq ++ Option(c.getSuperclass).toSeq)
          .flatMap(s => s +: supertypes(s))
      supertypes(m.getDeclaringClass).filter(c => Modifier.isPublic(c.getModifiers))
        .flatMap(c => try Some(c.getMethod(m.getName, m.getParameterTypes: _*)) catch {
          case _: NoSuchMethodException => None
        }).headOption.getOrElse(m)
    }

  /** `target.method(args...)`: the public method of that name whose parameters take `args`. */
  def call(target: AnyRef, method: String, args: Any*): Option[AnyRef] =
    target.getClass.getMethods.find(m => m.getName == method && accepts(m, args))
      .flatMap(invoke(_, target, args))

  /** `target.method(args..., None...)`: a Scala method whose parameters after `args` are
   * `Option`s with default None (as `DeltaLog.update`'s). */
  def callFilling(target: AnyRef, method: String, args: Any*): Option[AnyRef] =
    target.getClass.getMethods.find { m =>
      m.getName == method && m.getParameterCount >= args.size &&
        accepts(m.getParameterTypes.take(args.size), args) &&
        m.getParameterTypes.drop(args.size).forall(_ == classOf[Option[_]])
    }.flatMap(m => invoke(m, target, args ++ Seq.fill(m.getParameterCount - args.size)(None)))

  private def accepts(types: Array[Class[_]], args: Seq[Any]): Boolean =
    types.zip(args).forall { case (t, a) => a != null && boxes.getOrElse(t, t).isInstance(a) }

  /** The static `className.method(args...)`, the class loaded as Spark loads the application's
   * jars (the context class loader). None when the class is not there. */
  def callStatic(className: String, method: String, args: Any*): Option[AnyRef] =
    try {
      val loader = Option(Thread.currentThread.getContextClassLoader)
        .getOrElse(getClass.getClassLoader)
      Class.forName(className, true, loader).getMethods
        .find(m => Modifier.isStatic(m.getModifiers) && m.getName == method && accepts(m, args))
        .flatMap(invoke(_, null, args))
    } catch { case _: ClassNotFoundException | _: LinkageError => None }

  /** Whether `c` or one of its supertypes is the class or interface named `name`. */
  def implements(c: Class[_], name: String): Boolean =
    c != null && (c.getName == name || c.getInterfaces.exists(implements(_, name)) ||
      implements(c.getSuperclass, name))
}
